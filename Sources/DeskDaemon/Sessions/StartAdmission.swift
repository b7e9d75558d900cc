import DeskCore
import DeskLinux

/// Whether a start may go ahead, and if so, its `LaunchPlan`: the request, the caller, the
/// configuration and a snapshot of the registry in; a plan or one refusal with its sentence out.
/// Nothing here touches the host (the facts it needs are handed in), so every refusal is tested
/// without one (StartAdmissionTests).
///
/// The order of the checks is the order a person fixes them in: what they asked for (desktop,
/// size, depth, display), then who for, then whether the host has room.
struct StartAdmission {
    let configuration: DaemonConfiguration
    let facts: AdmissionFacts
    /// The sessions deskd holds now. The registry's claim checks the limits again, atomically,
    /// so two starts at one moment cannot both take the last place.
    let registry: SessionRegistry.Snapshot

    func admit(_ request: StartRequest, caller: Caller) throws(DeskError) -> LaunchPlan {
        if let options = request.slurm { return try admitToCluster(request, options: options, caller: caller) }
        let limits = configuration.limits
        let desktopName = request.desktop ?? configuration.defaultDesktop
        try limits.checkDesktop(desktopName)
        let library = TemplateLibrary(directories: configuration.templateDirectories)
        var template = try library.template(named: desktopName)
        // A user's xstartup is an X session's script: a Wayland desktop runs its template's.
        let userXstartup = configuration.honourUserXstartup && request.desktop == nil && type(of: configuration.displayServer(for: template)).runsUsersXstartup
        // The catalog of every desktop, read once, for a template that picks among others.
        var catalog: [DesktopInfo]?
        if !userXstartup { (template, catalog) = try waylandFallback(for: template, library: library) }
        let server = configuration.displayServer(for: template)
        try checkServes(template, on: server)
        // A desktop whose programs are not there would only exit at once; say what to install.
        // (The user's own ~/.vnc/xstartup, where it runs instead, is theirs to get right.)
        if !userXstartup { try checkInstalled(template, library: library, catalog: catalog) }
        let geometry = request.geometry ?? limits.fitting(configuration.defaultGeometry)
        try limits.checkGeometry(geometry)
        try type(of: server).check(geometry)
        let depth = try ColorDepth.validate(request.depth ?? configuration.defaultDepth)
        if let requested = request.display, !configuration.displayRange.contains(requested.number) {
            let range = configuration.displayRange
            throw DeskError(.invalidDisplay, "display \(requested) is out of range; use :\(range.lowerBound) to :\(range.upperBound).")
        }
        let account = try resolveAccount(request.user, caller: caller)
        let groups = limits.allowedGroups.filter { name in facts.groupID(name).map { account.gid == $0 || account.groups.contains($0) } ?? false }
        try limits.checkAccount(.init(name: account.name, groups: groups))
        try checkMemory()
        try server.checkInstalled(isExecutable: facts.isExecutable)
        try limits.checkCapacity(user: account.name, userSessions: registry.sessions(of: account.uid), hostSessions: registry.count)
        return LaunchPlan(account: account, template: template, geometry: geometry, depth: depth, display: request.display,
                          userXstartup: userXstartup, configuration: configuration)
    }

    /// A desktop as a Slurm job: the same checks of what was asked for and who for; the room is
    /// Slurm's to judge (memory, Xtigervnc and the template's programs are the nodes'), but for
    /// the most cluster desktops a user may have ([slurm] max_per_user).
    private func admitToCluster(_ request: StartRequest, options: SlurmOptions, caller: Caller) throws(DeskError) -> LaunchPlan {
        let settings = configuration.slurm
        guard settings.isEnabled else {
            throw DeskError(.slurmOff, "this deskd submits no desktops to Slurm; an admin turns that on with listen in the [slurm] section of \(configuration.configurationFile ?? ConfigurationFile.defaultPath), or leave out --slurm for a desktop on this host.")
        }
        let limits = configuration.limits
        let desktopName = request.desktop ?? configuration.defaultDesktop
        try limits.checkDesktop(desktopName)
        let template = try TemplateLibrary(directories: configuration.templateDirectories).template(named: desktopName)
        let geometry = request.geometry ?? limits.fitting(configuration.defaultGeometry)
        try limits.checkGeometry(geometry)
        try type(of: configuration.displayServer(for: template)).check(geometry)
        let depth = try ColorDepth.validate(request.depth ?? configuration.defaultDepth)
        if let requested = request.display {
            throw DeskError(.badRequest, "--display picks a display on this host; a cluster desktop gets its own on its node. Leave out --display (deskctl names the new desktop :N for kill and url), or leave out --slurm for \(requested) here.")
        }
        let account = try resolveAccount(request.user, caller: caller)
        let groups = limits.allowedGroups.filter { name in facts.groupID(name).map { account.gid == $0 || account.groups.contains($0) } ?? false }
        try limits.checkAccount(.init(name: account.name, groups: groups))
        let running = registry.clusterSessions(of: account.uid)
        guard running < settings.maxPerUser else {
            throw DeskError(.limitReached, "\(account.name) has \(running) cluster desktop\(running == 1 ? "" : "s") already, the most [slurm] max_per_user allows; end one first (deskctl list, then deskctl kill :N).")
        }
        let merged = SlurmOptions(partition: options.partition ?? settings.partition, time: options.time ?? settings.time,
                                  gres: options.gres ?? settings.gres, account: options.account ?? settings.account, cores: options.cores)
        // What Slurm would refuse (a partition's MaxTime, its nodes' cores and GPUs) and the site's
        // own max_time, refused here in a sentence before anything is submitted.
        try settings.choices(partitions: facts.partitions()).check(merged)
        return LaunchPlan(account: account, template: template, geometry: geometry, depth: depth, display: nil,
                          userXstartup: false, slurm: merged, configuration: configuration)
    }

    /// auto runs in Xvnc and picks among X desktops itself; where none of them can start (not
    /// even xterm) but a Wayland desktop it names can, that desktop's own template is started
    /// instead, so a host with only labwc or sway still gets a desktop from `auto`. Never while
    /// an X desktop can start: auto does not pick Wayland unless nothing else is installed.
    /// With the catalog it read, for `checkInstalled` (nil for a template that picks nothing).
    private func waylandFallback(for template: XstartupTemplate, library: TemplateLibrary) throws(DeskError) -> (XstartupTemplate, [DesktopInfo]?) {
        guard !template.picks.isEmpty else { return (template, nil) }
        let catalog = readCatalog(library)
        guard let starts = catalog.first(where: { $0.name == template.name })?.starts else { return (template, catalog) }
        let picked = try library.template(named: starts)
        // auto runs the picks of its own server itself; one of another is started by its own template.
        return (picked.displayServerKind == template.displayServerKind ? template : picked, catalog)
    }

    private func readCatalog(_ library: TemplateLibrary) -> [DesktopInfo] {
        library.catalog(defaultDesktop: configuration.defaultDesktop, path: configuration.sessionPath, isExecutable: facts.isExecutable, isFile: facts.isFile)
    }

    /// A server whose viewers get in by the owner's socket alone (wayvnc's security type None)
    /// is served only there: never on TCP, where it would let anyone in.
    private func checkServes(_ template: XstartupTemplate, on server: any DisplayServer) throws(DeskError) {
        guard type(of: server).viewerAccess == .ownersSocket, configuration.vncExposure.usesTCP else { return }
        throw DeskError(.invalidDesktop, "the desktop '\(template.name)' is a Wayland desktop, which deskd serves only on the owner's socket, and this deskd serves desktops on TCP (network.listen); start an X desktop (deskctl desktops lists them), or ask an admin to set network.listen = \"unix\".")
    }

    /// A template that picks among others (auto) is installed when one of its picks is. The
    /// whole catalog reads every template, so it is read only for such a template or for the
    /// refusal's list of the desktops that are installed: a plain start looks at its own alone.
    /// `catalog` is the one already read for the start, if it was.
    private func checkInstalled(_ template: XstartupTemplate, library: TemplateLibrary, catalog: [DesktopInfo]?) throws(DeskError) {
        let catalog = catalog ?? (template.picks.isEmpty ? nil : readCatalog(library))
        let info = catalog?.first { $0.name == template.name }
            ?? library.describe(template, defaultDesktop: configuration.defaultDesktop, path: configuration.sessionPath,
                                isExecutable: facts.isExecutable, isFile: facts.isFile)
        if info.installed, info.unstartable != nil {
            throw DeskError(.invalidDesktop, info.unstartableSentence(startableOthers: (catalog ?? readCatalog(library)).filter(\.canStart).map(\.name)))
        }
        guard !info.installed else { return }
        throw DeskError(.invalidDesktop, info.notInstalledSentence(installedOthers: (catalog ?? readCatalog(library)).filter(\.installed).map(\.name)))
    }

    /// The account the desktop is for: the named one (another user's for admins only), else
    /// the caller's own; never root's, and (sessions.require_login_shell) one that may log in.
    private func resolveAccount(_ name: String?, caller: Caller) throws(DeskError) -> UserAccount {
        let policy = AccessPolicy(minimumUID: configuration.minimumUID)
        let account: UserAccount
        if let name {
            guard let found = facts.account(name) else { throw Self.unknownUser(name) }
            guard policy.mayAct(caller, onSessionOf: found.uid) else {
                throw DeskError(.permissionDenied, "only an admin may start a desktop for another user (\(found.name)); leave out --user to start your own.")
            }
            account = found
        } else {
            guard caller.uid != 0 else {
                throw DeskError(.userNotAllowed, "deskd does not run desktops as root; name the user: deskctl start --user NAME.")
            }
            guard let found = facts.accountOfUID(caller.uid) else {
                throw DeskError(.unknownUser, "your uid \(caller.uid) has no account on this host.")
            }
            account = found
        }
        try policy.checkDesktopAccount(name: account.name, uid: account.uid)
        if configuration.requireLoginShell, let problem = AccessPolicy.loginProblem(
            name: account.name, uid: account.uid, shell: account.shell, home: account.home, homeExists: facts.isDirectory(account.home)) {
            throw problem
        }
        return account
    }

    /// Refuses a start that would leave less memory available than `limits.memory_reserve`.
    /// Approximate on purpose: starts at the same moment read the same MemAvailable, and a
    /// desktop's real cost shows only as its user works.
    private func checkMemory() throws(DeskError) {
        guard let reserve = configuration.memoryReserve, let available = facts.memoryAvailable() else { return }
        let after = available - configuration.memoryPerSession
        guard after < reserve else { return }
        let size = ByteSize.text
        throw DeskError(.memoryLow, "a new desktop would leave \(size(max(0, after))) of memory available (\(size(available)) now, less limits.memory_per_session \(size(configuration.memoryPerSession))), under limits.memory_reserve \(size(reserve)); end an idle session (deskctl reap --idle) or ask an admin.")
    }

    /// The one sentence every verb gives for a name that is not an account here.
    static func unknownUser(_ name: String) -> DeskError {
        DeskError(.unknownUser, "there is no user named '\(name)' on this host; check the name with: getent passwd \(name).")
    }
}
