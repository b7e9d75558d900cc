/// The page a `deskctl url` link opens: it trades the link's token for a cookie and goes on to
/// noVNC. The token rides in the fragment, which browsers never send, and leaves in a POST
/// body, so no server or proxy log ever holds it.
enum OpenPage {
    static let refusedSentence = "This link was already used or has expired; ask for a new one with deskctl url."

    /// Scripts only from this origin (the page's own is /open.js), nothing else at all.
    static let contentSecurityPolicy = "default-src 'none'; script-src 'self'; connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

    /// Where noVNC is told to connect: settings in the fragment, which it reads before the query.
    static let viewerLocation = "/vnc.html#autoconnect=1&resize=remote&reconnect=0&path=websockify"

    static let html = """
        <!DOCTYPE html>
        <html lang="en">
        <head>
        <meta charset="utf-8">
        <meta name="referrer" content="no-referrer">
        <meta name="viewport" content="width=device-width, initial-scale=1">
        <title>Opening the desktop</title>
        <script src="/open.js" defer></script>
        </head>
        <body>
        <p id="status">Opening the desktop…</p>
        <noscript><p>The desktop opens in noVNC, which needs JavaScript.</p></noscript>
        </body>
        </html>

        """

    static let script = """
        'use strict';
        (async () => {
          const say = (text) => { document.getElementById('status').textContent = text; };
          const fragment = new URLSearchParams(location.hash.slice(1));
          const token = fragment.get('token');
          // The portal's Open names the desktop (its id) for the viewer's page, whose file drops
          // (/deskd-drop.js) ask the portal whether this browser is its owner's.
          const session = /^[0-9a-f]{1,64}$/.test(fragment.get('session') || '') ? fragment.get('session') : null;
          // The token leaves the address bar and the history before anything else happens.
          history.replaceState(null, '', '/open');
          if (!token) { say(\(jsString(refusedSentence))); return; }
          let answer;
          try {
            const response = await fetch('/exchange', {
              method: 'POST', body: token, credentials: 'same-origin', cache: 'no-store',
              headers: { 'Content-Type': 'text/plain' },
            });
            if (!response.ok) {
              // The gateway refuses in the control protocol's shape: {"error":{"code","message"}}.
              const refusal = await response.json().catch(() => null);
              say(refusal?.error?.message || \(jsString(refusedSentence)));
              return;
            }
            answer = await response.json();
          } catch (error) {
            say('The desktop gateway did not answer; try the link again in a moment.');
            return;
          }
          location.replace(\(jsString(viewerLocation)) + (answer.viewOnly ? '&view_only=1' : '') +
                           (session && !answer.viewOnly ? '&deskd_session=' + session : ''));
        })();

        """

    private static func jsString(_ text: String) -> String {
        var quoted = "'"
        for character in text {
            if character == "\\" || character == "'" { quoted.append("\\") }
            quoted.append(character)
        }
        return quoted + "'"
    }
}
