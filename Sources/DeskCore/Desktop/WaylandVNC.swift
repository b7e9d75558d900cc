/// A Wayland desktop: a wlroots compositor run headless as the user, with wayvnc serving its
/// screen in RFB on the session's socket. Both live in the session's private directory, which
/// is also their `XDG_RUNTIME_DIR`: the compositor's Wayland socket, its IPC socket and the RFB
/// socket are inside the owner's 0700 directory, so wayvnc's security type None (the only one
/// it offers on a Unix socket) lets in the owner and root, and no one else.
///
/// The process deskd starts is a short shell launcher (`launcher`): it starts the compositor,
/// waits until the compositor's Wayland socket is there, then becomes wayvnc (`exec`). So the
/// pid deskd watches is the one that holds the RFB socket (SO_PEERCRED on it names that pid,
/// as Xvnc's does), the viewers it counts are wayvnc's, and when the compositor ends, wayvnc
/// loses its display and ends, and with it the session.
public struct WaylandVNC: DisplayServer {
    public var compositor: Compositor
    public var wayvnc: String

    public init(compositor: Compositor, wayvnc: String = "/usr/bin/wayvnc") {
        self.compositor = compositor
        self.wayvnc = wayvnc
    }

    /// The compositors deskd runs headless, and how each is started and told its output's size.
    public enum Compositor: String, Sendable, Equatable, CaseIterable {
        /// Its own configuration (the user's, else Debian's) gets the output's size and the hook.
        case sway
        /// Told the hook with `-s`; its output takes the size from wlr-randr, run by the hook
        /// (labwc has no output configuration of its own).
        case labwc

        /// The programs it needs besides wayvnc.
        public var executable: String { "/usr/bin/" + rawValue }
    }

    public var sessionType: String { "wayland" }

    /// What the compositor's startup hook writes, for the desktop's own programs: the Wayland
    /// display, Xwayland's X display (chosen by the compositor when it starts) and sway's IPC.
    public static let environmentFile = ".deskd-compositor.env"

    /// The X displays wlroots chooses Xwayland's among (the first free one).
    public static let xwaylandDisplays = 0...32

    /// Xwayland's display, as the compositor's hook recorded it (`DISPLAY=:0`); nil if none.
    public static func xDisplay(recordedIn text: String) -> Display? {
        for line in text.split(separator: "\n") where line.hasPrefix("DISPLAY=:") {
            if let number = Int(line.dropFirst("DISPLAY=:".count)), number >= 0, number < 65536 { return Display(number) }
        }
        return nil
    }

    /// The variables the hook records, each a name and value with no space or quote in them.
    static let recorded = ["WAYLAND_DISPLAY", "DISPLAY", "SWAYSOCK"]

    public func commandLine(_ needs: DisplayServerNeeds) -> [String] {
        ["/bin/sh", "-c", launcher, "deskd-wayland", compositor.executable, needs.geometry.description, wayvnc, needs.rfbSocket]
    }

    /// $1 compositor, $2 its size (WIDTHxHEIGHT), $3 wayvnc, $4 the RFB socket. wayvnc starts as
    /// soon as the compositor's Wayland socket is there (a client's first round trip waits for
    /// the compositor's event loop, by when its output exists); the startup hook, which records
    /// the displays for the desktop's programs, runs beside it, off the start's path. The hook
    /// is a script of its own in the private directory, so neither the compositor's
    /// configuration syntax nor the shell here has to quote it, and its file appears in one
    /// rename. wayvnc reads no configuration file of the user's (-C /dev/null): one could turn
    /// on a listener on the network.
    var launcher: String {
        let file = "$XDG_RUNTIME_DIR/\(Self.environmentFile)"
        let record = Self.recorded.map { "\($0)=%s" }.joined(separator: "\\n") + "\\n"
        let values = Self.recorded.map { "\"$\($0)\"" }.joined(separator: " ")
        // What the desktop's programs make is the user's usual 0644, not deskd's 0600 for the
        // server's own files (the directory keeps the sockets the owner's).
        let start: String
        switch compositor {
        case .sway:
            start = """
                # The user's own sway configuration (or Debian's), then the headless output's size.
                config="$XDG_RUNTIME_DIR/sway.config"
                base="${XDG_CONFIG_HOME:-$HOME/.config}/sway/config"
                [ -r "$base" ] || base=/etc/sway/config
                printf 'include "%s"\\noutput HEADLESS-1 resolution %s\\nexec /bin/sh "%s"\\n' "$base" "$2" "$hook" > "$config"
                (umask 022 && exec "$1" -c "$config") &
                """
        case .labwc:
            // The size is WIDTHxHEIGHT, digits and an x (deskd parsed it): a word of its own.
            start = """
                printf 'command -v wlr-randr >/dev/null && wlr-randr --output HEADLESS-1 --custom-mode %s\\n' "$2" >> "$hook"
                (umask 022 && exec "$1" -s "/bin/sh $hook") &
                """
        }
        return """
            unset WAYLAND_DISPLAY DISPLAY
            export WLR_BACKENDS=headless WLR_LIBINPUT_NO_DEVICES=1 WLR_RENDERER=pixman
            hook="$XDG_RUNTIME_DIR/deskd-started.sh"
            printf '%s\\n' 'printf '"'"'\(record)'"'"' \(values) > "\(file).new" && mv "\(file).new" "\(file)"' > "$hook"
            \(start)
            compositor=$!
            tries=0
            while :; do
                for socket in "$XDG_RUNTIME_DIR"/wayland-*; do
                    [ -S "$socket" ] && break 2
                done
                kill -0 "$compositor" 2>/dev/null || { echo "deskd: $1 ended before it made its Wayland socket" >&2; exit 1; }
                tries=$((tries + 1)); [ "$tries" -lt 6000 ] || { echo "deskd: $1 made no Wayland socket within 30 s" >&2; exit 1; }
                sleep 0.005
            done
            WAYLAND_DISPLAY=${socket##*/}
            export WAYLAND_DISPLAY
            exec "$3" -C /dev/null -u "$4"
            """
    }

    /// Only the session's directory as XDG_RUNTIME_DIR (a login's shared /run/user/UID would
    /// put two desktops of one user side by side); the rest comes from the compositor's hook,
    /// read by `desktopCommand`.
    public func clientEnvironment(_ needs: DisplayServerNeeds) -> [String: String] {
        ["XDG_RUNTIME_DIR": needs.directory]
    }

    /// The desktop's script, once the compositor's hook has said where its displays are (it
    /// has, by the time wayvnc answers, but the wait costs nothing where it has).
    public func desktopCommand(xstartup: String) -> [String] {
        ["/bin/sh", "-c", """
            file="$XDG_RUNTIME_DIR/\(Self.environmentFile)" tries=0
            while [ ! -e "$file" ] && [ "$tries" -lt 2000 ]; do tries=$((tries + 1)); sleep 0.005; done
            while IFS='=' read -r name value; do [ -n "$value" ] && export "$name=$value"; done < "$file"
            exec /bin/sh "$1"
            """, "deskd-desktop", xstartup]
    }

    /// The compositor's Wayland sockets are in the private directory; any connection to one of
    /// them is to this desktop's compositor.
    /// The Wayland sockets of a compositor whose XDG_RUNTIME_DIR is `directory`.
    public static func clientSocket(in directory: String) -> DisplayClientSocket {
        .inPrivateDirectory(prefix: directory + "/wayland-")
    }

    /// wayvnc's Tight encoder cuts the screen into 64×64 tiles; where the last one holds fewer
    /// than 4 pixels (width and height both 1 to 3 past a multiple of 64) it writes a rectangle
    /// two readers measure apart (the browser gateway refuses it: ServerMessageFilter), so a
    /// Wayland desktop of that size is refused at its start, with the nearest size that works.
    public static func checkTiles(_ geometry: Geometry) throws(DeskError) {
        let across = geometry.width % 64, down = geometry.height % 64
        guard across > 0, down > 0, across * down < 4 else { return }
        throw DeskError(.invalidGeometry, "a Wayland desktop cannot be \(geometry): wayvnc sends the last of its 64×64 tiles, \(across)×\(down) pixels, in a form browsers misread; use \(Geometry(width: geometry.width - across + 4, height: geometry.height)) or \(Geometry(width: geometry.width - across, height: geometry.height)).")
    }

    /// The Wayland display is not a number the launcher claims: nothing of its log means that.
    public func displayWasTaken(log: [String]) -> Bool { false }

    public var name: String { "\(compositor.rawValue) with wayvnc" }
}
