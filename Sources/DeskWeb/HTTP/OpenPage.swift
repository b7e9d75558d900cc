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

    /// deskd's viewer, `/deskd-viewer.js` in noVNC's page: a page the portal opened at the click
    /// loads noVNC while deskd starts the desktop and makes its link. The portal then puts the
    /// link's token in the page's fragment (`deskd_token`, with `deskd_session` for drop.js);
    /// the token leaves the address bar and the history at once. Once noVNC is set up it is
    /// traded for the gateway's cookie as /open trades it, and noVNC's own Connect is pressed at
    /// once: the cookie has one name, so a trade made earlier could be overtaken by another
    /// tab's before this one connects. noVNC's connect panel is hidden meanwhile. A link that
    /// has not come in two minutes (the portal closed, a start that failed where the tab was
    /// not closed) is said to have not come. A page without `deskd_wait` in its fragment is left
    /// as it is. `data-deskd-viewer` on the root says where it stands: waiting, open, refused.
    static let viewerScript = """
        'use strict';
        (() => {
          const root = document.documentElement;
          if (new URLSearchParams(location.hash.slice(1)).get('deskd_wait') !== '1') return;
          root.dataset.deskdViewer = 'waiting';
          const style = document.createElement('style');
          // noVNC's own Connect is no use without the link: hidden while it comes, and if it is refused.
          style.textContent = 'html[data-deskd-viewer="waiting"] #noVNC_connect_dlg, html[data-deskd-viewer="refused"] #noVNC_connect_dlg { visibility: hidden; }' +
            '#deskd-viewer-status { position: fixed; inset: 40% 0 auto; text-align: center; color: #fff; font: 600 18px/1.4 system-ui, sans-serif; }';
          document.head.append(style);
          // A live region is in the page before its words change, so screen readers say them.
          const status = document.createElement('p');
          status.id = 'deskd-viewer-status';
          status.setAttribute('role', 'status');
          const say = (text) => {
            if (!status.isConnected && document.body) document.body.append(status);
            setTimeout(() => { status.textContent = text; }, 0);
          };
          const showStatus = () => { if (root.dataset.deskdViewer === 'waiting') say('Opening the desktop…'); };
          if (document.readyState === 'loading') document.addEventListener('DOMContentLoaded', showStatus);
          else showStatus();
          const refuse = (text) => { root.dataset.deskdViewer = 'refused'; say(text); };
          const late = setTimeout(() => {
            if (root.dataset.deskdViewer === 'waiting' && !taken) refuse('The desktop did not come; open it again from the portal.');
          }, 120000);
          // noVNC's connect panel opens once its page is set up; its Connect works from then on.
          const panel = () => document.getElementById('noVNC_connect_dlg');
          const panelOpen = () => new Promise((resolve) => {
            if (panel()?.classList.contains('noVNC_open')) return resolve();
            const watch = new MutationObserver(() => {
              if (panel()?.classList.contains('noVNC_open')) { watch.disconnect(); resolve(); }
            });
            watch.observe(root, { subtree: true, attributes: true, attributeFilter: ['class'] });
          });
          let taken = false;
          async function take() {
            const fragment = new URLSearchParams(location.hash.slice(1));
            const token = fragment.get('deskd_token');
            if (!token || taken) return;
            taken = true;
            clearTimeout(late);
            fragment.delete('deskd_token');
            fragment.delete('deskd_wait');
            history.replaceState(null, '', location.pathname + '#' + fragment.toString());
            await panelOpen();
            let answer;
            try {
              const response = await fetch('/exchange', {
                method: 'POST', body: token, credentials: 'same-origin', cache: 'no-store',
                headers: { 'Content-Type': 'text/plain' },
              });
              answer = await response.json().catch(() => null);
              if (!response.ok) return refuse(answer?.error?.message || \(jsString(refusedSentence)));
            } catch (error) {
              return refuse('The desktop gateway did not answer; open the desktop again from the portal.');
            }
            // noVNC read view_only=0 when it loaded: a view-only answer loads the page again
            // (a new fragment alone would not), as /open would send it.
            if (answer.viewOnly) {
              location.replace(\(jsString(viewerLocation)) + '&view_only=1');
              return location.reload();
            }
            status.remove();
            root.dataset.deskdViewer = 'open';
            window.dispatchEvent(new Event('deskd-viewer-open'));
            document.getElementById('noVNC_connect_button').click();
          }
          window.addEventListener('hashchange', take);
          take();
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
