/// A Wayland desktop: a wlroots compositor run headless as the user, with wayvnc serving its
/// screen in RFB on the session's socket, in the session's private directory (the owner's, 0700):
/// wayvnc's security type None (the only one it offers on a Unix socket) lets in the owner and
/// root, and no one else.
///
/// The desktop is a login like any other: the compositor and every program it or the desktop's
/// script starts run with the login's `XDG_RUNTIME_DIR` (`/run/user/UID`, where pam_systemd made
/// it; the private directory where nothing did), so the user bus, PipeWire and `systemctl --user`
/// are where programs look for them. Two desktops of one user share that directory without
/// colliding: the compositor picks the first free `wayland-N` there, and the programs reach it by
/// its absolute path (`WAYLAND_DISPLAY`), as the compositor's startup hook records it. Where the
/// login has no session bus, the desktop gets one of its own (a dbus-daemon in the private
/// directory), which ends with it.
///
/// The process deskd starts is a short shell launcher (`launcher`): it starts the compositor,
/// waits until the compositor's startup hook has run, then becomes wayvnc (`exec`). So the pid
/// deskd watches is the one that holds the RFB socket (SO_PEERCRED on it names that pid, as
/// Xvnc's does), the viewers it counts are wayvnc's, and when the compositor ends, wayvnc loses
/// its display and ends, and with it the session.
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

    public static let kind = DisplayServerKind.wayland
    public static let viewerAccess = ViewerAccess.ownersSocket
    public static let viewerProgram = "wayvnc"
    public static let runsUsersXstartup = false
    public static let ownsXDisplay = false
    /// wayvnc keeps nothing from a viewer on its socket (no view-only password), and some of its
    /// Tight rectangles are misread by browsers: the gateway reads what it sends.
    public static let relayReadsServerMessages = true

    public var sessionType: String { "wayland" }

    /// What the compositor's startup hook writes in the private directory, for the desktop's own
    /// programs and for the launcher, which waits for it: the Wayland display (an absolute
    /// path), Xwayland's X display (chosen by the compositor when it starts), sway's IPC and the
    /// session bus.
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

    /// The variables the hook records, each a name and a value with no space or quote in them.
    static let recorded = ["WAYLAND_DISPLAY", "DISPLAY", "SWAYSOCK", "DBUS_SESSION_BUS_ADDRESS"]

    /// The runtime directory pam_systemd makes for a login of `uid`.
    public static func loginRuntimeDirectory(uid: UInt32) -> String { "/run/user/\(uid)" }

    public func commandLine(_ needs: DisplayServerNeeds) -> [String] {
        ["/bin/sh", "-c", launcher, "deskd-wayland", compositor.executable, needs.geometry.description, wayvnc, needs.rfbSocket, needs.directory]
    }

    /// $1 compositor, $2 its size (WIDTHxHEIGHT), $3 wayvnc, $4 the RFB socket, $5 the private
    /// directory. The startup hook, a script of its own in the private directory (so neither the
    /// compositor's configuration syntax nor the shell here has to quote it), runs once the
    /// compositor serves its display; it records the displays in one rename and wakes the
    /// launcher (SIGUSR1), which then starts wayvnc on that display. wayvnc's own runtime
    /// directory is the private one (its control socket goes there, one per desktop), and it reads
    /// no configuration file of the user's (-C /dev/null): one could turn on a listener on the
    /// network.
    var launcher: String {
        let format = Self.recorded.map { "\($0)=%s" }.joined(separator: "\\n") + "\\n"
        let values = Self.recorded.map { "\"$\($0)\"" }.joined(separator: " ")
        // The hook runs in the compositor's environment, from its own path in the private
        // directory; WAYLAND_DISPLAY is made absolute, so a program told it finds this desktop
        // whatever its XDG_RUNTIME_DIR.
        let hook = """
            case $WAYLAND_DISPLAY in /*) ;; *) WAYLAND_DISPLAY=$XDG_RUNTIME_DIR/$WAYLAND_DISPLAY ;; esac
            record="${0%/*}/\(Self.environmentFile)"
            printf '\(format)' \(values) > "$record.new" && mv "$record.new" "$record"
            """
        // What the desktop's programs make is the user's usual 0644, not deskd's 0600 for the
        // server's own files (the directory keeps the sockets the owner's).
        let start: String
        switch compositor {
        case .sway:
            // Debian's configuration names a wallpaper of sway-backgrounds, a package sway only
            // recommends: without it, that line is an error, and sway's first sight is a red bar
            // saying the configuration has errors. deskd's copy leaves out a wallpaper that is
            // not there; a user's own configuration is read as it is.
            start = """
                printf '%s\\n%s\\n' \(shellQuoted(hook)) "$wake" > "$hook"
                config="$5/sway.config"
                base="${XDG_CONFIG_HOME:-$HOME/.config}/sway/config"
                if [ ! -r "$base" ]; then
                    base="$5/sway.system.config"
                    awk '$1 == "output" && $3 == "bg" && $4 ~ "^/" { if ((getline line < $4) < 0) { print "# deskd: no such wallpaper: " $0; next } close($4) } { print }' /etc/sway/config > "$base"
                fi
                printf 'include "%s"\\noutput HEADLESS-1 resolution %s\\nexec /bin/sh "%s"\\n' "$base" "$2" "$hook" > "$config"
                (umask 022 && exec "$1" -c "$config") &
                """
        case .labwc:
            // The output's size first, so wayvnc starts at it. The size is WIDTHxHEIGHT, digits
            // and an x (deskd parsed it): a word of its own.
            start = """
                printf 'command -v wlr-randr >/dev/null && wlr-randr --output HEADLESS-1 --custom-mode %s\\n%s\\n%s\\n' "$2" \(shellQuoted(hook)) "$wake" > "$hook"
                (umask 022 && exec "$1" -s "/bin/sh $hook") &
                """
        }
        return """
            unset WAYLAND_DISPLAY DISPLAY SWAYSOCK
            export WLR_BACKENDS=headless WLR_LIBINPUT_NO_DEVICES=1 WLR_RENDERER=pixman
            hook="$5/deskd-started.sh" record="$5/\(Self.environmentFile)" wake="kill -USR1 $$ 2>/dev/null"
            # The hook's signal ends the wait below at once (the compositor's own is the default).
            trap : USR1
            # A session bus of the desktop's own where the login has none (no user bus runs), its
            # socket in the private directory. It starts beside the compositor rather than before
            # it: it listens within milliseconds, long before the compositor's programs (started
            # once its configuration is read) first ask for it; it ends with the session.
            if [ -z "$DBUS_SESSION_BUS_ADDRESS" ] && [ ! -S "$XDG_RUNTIME_DIR/bus" ] && command -v dbus-daemon >/dev/null; then
                dbus-daemon --session --address="unix:path=$5/bus" --nofork --nopidfile >/dev/null &
                export DBUS_SESSION_BUS_ADDRESS="unix:path=$5/bus"
            fi
            \(start)
            compositor=$! sleeper= tries=0
            until [ -e "$record" ]; do
                kill -0 "$compositor" 2>/dev/null || { echo "deskd: $1 ended before it served its display" >&2; exit 1; }
                tries=$((tries + 1)); [ "$tries" -le 60 ] || { echo "deskd: $1 served no display within 30 s" >&2; exit 1; }
                # Half a second at most: only a signal that came between the look and the wait
                # is not seen at once.
                sleep 0.5 & sleeper=$!
                wait "$sleeper"
            done
            [ -z "$sleeper" ] || kill "$sleeper" 2>/dev/null
            # A signal of the hook's after the look is nothing to wayvnc either.
            trap '' USR1
            while IFS='=' read -r name value; do [ "$name" = WAYLAND_DISPLAY ] && WAYLAND_DISPLAY=$value; done < "$record"
            export WAYLAND_DISPLAY
            XDG_RUNTIME_DIR=$5 exec "$3" -C /dev/null -u "$4"
            """
    }

    /// `text` as one single-quoted shell word.
    private func shellQuoted(_ text: String) -> String {
        "'" + text.split(separator: "'", omittingEmptySubsequences: false).joined(separator: "'\"'\"'") + "'"
    }

    /// The private directory as XDG_RUNTIME_DIR, for a login that has none of its own
    /// (deskd-session and a cluster job give the login's precedence); the displays come from the
    /// compositor's hook, read by `desktopCommand`.
    public func clientEnvironment(_ needs: DisplayServerNeeds) -> [String: String] {
        ["XDG_RUNTIME_DIR": needs.directory]
    }

    /// The desktop's script, once the compositor's hook has said where its displays are (it
    /// has, by the time wayvnc answers, but the wait costs nothing where it has). The hook's
    /// record is beside the script, in the private directory.
    public func desktopCommand(xstartup: String) -> [String] {
        ["/bin/sh", "-c", """
            file="${1%/*}/\(Self.environmentFile)" tries=0
            while [ ! -e "$file" ] && [ "$tries" -lt 2000 ]; do tries=$((tries + 1)); sleep 0.005; done
            while IFS='=' read -r name value; do [ -n "$value" ] && export "$name=$value"; done < "$file"
            exec /bin/sh "$1"
            """, "deskd-desktop", xstartup]
    }

    /// The compositor's Wayland sockets: in the login's runtime directory, or the private one
    /// where the login has none. Both are the owner's alone (0700), so any connection to one of
    /// them is the owner's; which of the owner's desktops it belongs to, the session's processes
    /// say (XClients looks among them only).
    public static func clientSocket(display: Display, uid: UInt32, directory: String) -> DisplayClientSocket {
        .inOwnersDirectories(prefixes: [loginRuntimeDirectory(uid: uid) + "/wayland-", directory + "/wayland-"])
    }

    /// wayvnc's Tight encoder cuts the screen into 64×64 tiles; where the last one holds fewer
    /// than 4 pixels (width and height both 1 to 3 past a multiple of 64) it writes a rectangle
    /// two readers measure apart (the browser gateway refuses it: ServerMessageFilter), so a
    /// Wayland desktop of that size is refused at its start, with the nearest size that works.
    public static func check(_ geometry: Geometry) throws(DeskError) {
        let across = geometry.width % 64, down = geometry.height % 64
        guard across > 0, down > 0, across * down < 4 else { return }
        throw DeskError(.invalidGeometry, "a Wayland desktop cannot be \(geometry): wayvnc sends the last of its 64×64 tiles, \(across)×\(down) pixels, in a form browsers misread; use \(Geometry(width: geometry.width - across + 4, height: geometry.height)) or \(Geometry(width: geometry.width - across, height: geometry.height)).")
    }

    /// Xwayland's lock, when the compositor did not live to remove it: its display is the
    /// compositor's choice, which its startup hook recorded.
    public static var leftoverRecord: String? { environmentFile }

    public static func leftoverDisplays(recorded text: String) -> [Display] {
        xDisplay(recordedIn: text).flatMap { xwaylandDisplays.contains($0.number) ? [$0] : nil } ?? []
    }

    public var name: String { "\(compositor.rawValue) with wayvnc" }
}
