"""The pages ``hermes-admin web`` serves: the console's page and a short message page.

The console's page loads textual-serve's own terminal (``/static/js/textual.js``, xterm.js)
and adds three things to it: a title and a favicon; the terminal filling the window; and a
few lines of script that give the terminal the keyboard as soon as the socket opens (and
again when the window gets focus back), and put the reason in the "session ended" box when
the socket closes. Nothing is loaded from another site, and no page holds a token or a key.
"""

from __future__ import annotations

import html
from string import Template

# A small "h" on the console's dark blue: the browser's tab icon, inline (no request).
FAVICON = ("data:image/svg+xml,%3Csvg xmlns='http://www.w3.org/2000/svg' viewBox='0 0 16 16'%3E"
           "%3Crect width='16' height='16' rx='3' fill='%230c181f'/%3E%3Ctext x='8' y='12.5' "
           "font-family='monospace' font-size='12' font-weight='bold' text-anchor='middle' "
           "fill='%23ffa62b'%3Eh%3C/text%3E%3C/svg%3E")

_STYLE = """
  html, body { margin: 0; height: 100%; background: #0c181f; color: #e0e0e0;
               font-family: menlo, 'DejaVu Sans Mono', monospace; overflow: hidden; }
  #terminal { position: absolute; inset: 0; }
  .note { position: absolute; inset: 0; display: none; align-items: center; justify-content: center;
          z-index: 10; background: rgba(12, 24, 31, 0.92); }
  .note div { max-width: 36em; padding: 1.5em 2em; background: #12232d; border: 1px solid #ffa62b;
              line-height: 1.5; }
  body.-closed .note { display: flex; }
  .intro { position: absolute; inset: 0; display: flex; align-items: center; justify-content: center; }
  body.-first-byte .intro, body.-closed .intro { display: none; }
"""

_PAGE = Template("""<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>$title</title>
<link rel="icon" href="$favicon">
<link rel="stylesheet" href="/static/css/xterm.css">
<style>$style</style>
<script>
// Give the terminal the keyboard from the first key, and say why a session ended.
(function () {
  const Native = window.WebSocket;
  function focusTerminal() {
    const t = document.querySelector(".xterm-helper-textarea");
    if (t && document.activeElement !== t) { t.focus({preventScroll: true}); }
  }
  window.hermesFocusTerminal = focusTerminal;
  class ConsoleSocket extends Native {
    constructor(url, protocols) {
      super(url, protocols);
      this.addEventListener("open", () => { focusTerminal(); setTimeout(focusTerminal, 50); });
      this.addEventListener("close", (e) => {
        const why = document.getElementById("why");
        if (why && e.reason) { why.textContent = e.reason; }
      });
    }
  }
  window.WebSocket = ConsoleSocket;
  window.addEventListener("focus", () => setTimeout(focusTerminal, 0));
  document.addEventListener("visibilitychange", () => { if (!document.hidden) focusTerminal(); });
})();
</script>
<script src="/static/js/textual.js"></script>
</head>
<body>
<div class="intro">starting hermes-admin…</div>
<div class="note" role="alert"><div><b>Session ended.</b>
<p id="why">The console's process has ended.</p>
<p>Reload this page to start the console again while the session lasts; after that, use a
new link from <code>hermes-admin web</code>.</p></div></div>
<div id="terminal" class="textual-terminal" data-session-websocket-url="$ws_url"
     data-font-size="$font_size"></div>
</body>
</html>
""")

_MESSAGE = Template("""<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>hermes-admin web</title>
<link rel="icon" href="$favicon">
<style>$style</style>
</head>
<body class="-closed">
<div class="note" role="alert"><div><b>hermes-admin web</b><p>$why</p></div></div>
</body>
</html>
""")


def console_page(*, title: str, ws_url: str, font_size: int) -> str:
    """The console's page: *ws_url* is the socket's URL (never with a token in it)."""
    return _PAGE.substitute(title=html.escape(title), favicon=FAVICON, style=_STYLE,
                            ws_url=html.escape(ws_url), font_size=int(font_size))


def message_page(why: str) -> str:
    """A short page that says *why* (a refusal, or why there is no console)."""
    return _MESSAGE.substitute(favicon=FAVICON, style=_STYLE, why=html.escape(why))
