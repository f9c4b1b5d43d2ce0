"""The alert book to the field: what each notification carries, a seeded alert, two alerts
whose conditions go different ways, and a condition whose words change while it holds.
(tests/monitor/test_alerts.py holds the properties; these pin the values a delivery uses.)"""

from __future__ import annotations

from dataclasses import replace

from store.monitor.alerts import FIRING, RESOLVED, AlertBook, Notification
from store.monitor.conditions import Condition

A = Condition("pool_empty/default/openrouter", "pool_empty", "critical", "default", "no key", "no key left")
B = Condition("pool_empty/default/anthropic", "pool_empty", "critical", "default", "no key", "no key left")


def test_a_firing_and_its_recovery_carry_the_condition_and_both_times() -> None:
    book = AlertBook(quiet_period=0.0)
    assert book.update({A.key: A}, 100.0) == [Notification(FIRING, A, 100.0, 100.0)]
    assert book.update({A.key: A}, 150.0) == []
    assert book.update({}, 200.0) == [Notification(RESOLVED, A, 200.0, 100.0)]
    assert book.open == {}


def test_the_recovery_says_the_words_the_condition_had_last() -> None:
    book = AlertBook(quiet_period=0.0)
    book.update({A.key: A}, 1.0)
    later = replace(A, text="no key left; the first reopens at 12:00")
    book.update({A.key: later}, 2.0)
    assert book.open[A.key].condition == later
    (resolved,) = book.update({}, 3.0)
    assert resolved.condition == later and resolved.since == 1.0


def test_an_alert_that_still_holds_does_not_stop_the_recovery_of_another() -> None:
    for first, second in ((A, B), (B, A)):
        book = AlertBook(quiet_period=0.0)
        book.update({first.key: first, second.key: second}, 1.0)
        out = book.update({first.key: first}, 2.0)
        assert out == [Notification(RESOLVED, second, 2.0, 1.0)]
        assert list(book.open) == [first.key]


def test_a_seeded_alert_is_not_sent_again_and_recovers_with_its_own_start() -> None:
    book = AlertBook(quiet_period=0.0)
    book.seed([(A, 50.0)])
    assert book.open[A.key].condition == A and book.open[A.key].since == 50.0
    assert book.update({A.key: A}, 60.0) == []                 # a restart does not fire it again
    assert book.update({}, 70.0) == [Notification(RESOLVED, A, 70.0, 50.0)]


def test_seeding_never_replaces_an_alert_the_book_holds() -> None:
    book = AlertBook(quiet_period=0.0)
    book.update({A.key: A}, 10.0)
    book.seed([(replace(A, text="older words"), 5.0)])
    assert book.open[A.key].since == 10.0 and book.open[A.key].condition == A
