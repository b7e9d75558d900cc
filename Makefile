# deskd: build, install and uninstall.
#
#   make                      release build
#   make install              into PREFIX (default /usr/local); DESTDIR stages it elsewhere
#   make uninstall            removes what install put there (not /etc/deskd/deskd.toml)
#   make man                  regenerates docs/man (scripts/make-man)
#   make deb                  the Debian package: dpkg-buildpackage (debian/), then
#                             .build-deb/deskd_VERSION_ARCH.deb (scripts/make-deb)
#   make check                the whole test suite (scripts/check)
#
# SKIP_BUILD=1 installs the binaries already in BUILD_DIR without building. SWIFT_BUILD_FLAGS
# go to each swift build (debian/rules: --scratch-path .build-deb, with BUILD_DIR to match).

PREFIX      ?= /usr/local
DESTDIR     ?=
BINDIR      ?= $(PREFIX)/bin
SBINDIR     ?= $(PREFIX)/sbin
LIBEXECDIR  ?= $(PREFIX)/libexec
DATADIR     ?= $(PREFIX)/share
MANDIR      ?= $(DATADIR)/man
DOCDIR      ?= $(DATADIR)/doc/deskd
TEMPLATEDIR ?= $(DATADIR)/deskd/templates
UNITDIR     ?= $(PREFIX)/lib/systemd/system
TMPFILESDIR ?= $(PREFIX)/lib/tmpfiles.d
SYSUSERSDIR ?= $(PREFIX)/lib/sysusers.d
SYSCONFDIR  ?= /etc
BUILD_DIR   ?= .build/release
SWIFT       ?= swift
SWIFT_BUILD_FLAGS ?=
# The date the man pages carry.
MAN_DATE    ?= 2026-11-22
# Installed binaries are stripped (install -s): debug information is most of an unstripped
# binary's size. The build directory keeps its unstripped ones; STRIP= installs them unstripped.
STRIP       ?= strip
INSTALL_BIN  = install -m 0755 $(if $(STRIP),-s --strip-program=$(STRIP))

BASHDIR = $(DATADIR)/bash-completion/completions
ZSHDIR  = $(DATADIR)/zsh/site-functions
FISHDIR = $(DATADIR)/fish/vendor_completions.d

UNITS     = deskd.service deskd-web.service deskd-reap.service deskd-reap.timer
TEMPLATES = $(wildcard Templates/*.xstartup)

.PHONY: all build install uninstall man check deb

all: build

build:
ifeq ($(SKIP_BUILD),)
	$(SWIFT) build -c release --static-swift-stdlib $(SWIFT_BUILD_FLAGS) --product deskd
	$(SWIFT) build -c release --static-swift-stdlib $(SWIFT_BUILD_FLAGS) --product deskctl
	$(SWIFT) build -c release --static-swift-stdlib $(SWIFT_BUILD_FLAGS) --product deskd-session
	$(SWIFT) build -c release --static-swift-stdlib $(SWIFT_BUILD_FLAGS) --product deskd-job
	$(SWIFT) build -c release --static-swift-stdlib $(SWIFT_BUILD_FLAGS) --product deskd-web
	$(SWIFT) build -c release --static-swift-stdlib $(SWIFT_BUILD_FLAGS) --product deskd-auth
	$(SWIFT) build -c release --static-swift-stdlib $(SWIFT_BUILD_FLAGS) --product deskd-files
endif

install: build
	install -d $(DESTDIR)$(BINDIR) $(DESTDIR)$(SBINDIR) $(DESTDIR)$(TEMPLATEDIR) $(DESTDIR)$(UNITDIR) \
		$(DESTDIR)$(TMPFILESDIR) $(DESTDIR)$(SYSUSERSDIR) $(DESTDIR)$(MANDIR)/man1 $(DESTDIR)$(MANDIR)/man5 $(DESTDIR)$(MANDIR)/man8 $(DESTDIR)$(DOCDIR) \
		$(DESTDIR)$(BASHDIR) $(DESTDIR)$(ZSHDIR) $(DESTDIR)$(FISHDIR) $(DESTDIR)$(SYSCONFDIR)/deskd/templates
	$(INSTALL_BIN) $(BUILD_DIR)/deskd $(DESTDIR)$(SBINDIR)/deskd
	$(INSTALL_BIN) $(BUILD_DIR)/deskctl $(DESTDIR)$(BINDIR)/deskctl
	# deskd finds deskd-session in ../libexec/deskd beside its own sbin directory.
	install -d $(DESTDIR)$(LIBEXECDIR)/deskd $(DESTDIR)$(SYSCONFDIR)/pam.d
	$(INSTALL_BIN) $(BUILD_DIR)/deskd-session $(DESTDIR)$(LIBEXECDIR)/deskd/deskd-session
	# A cluster desktop's job on a compute node ([slurm] job_program); unused where no node runs one.
	$(INSTALL_BIN) $(BUILD_DIR)/deskd-job $(DESTDIR)$(LIBEXECDIR)/deskd/deskd-job
	# deskd's web front (the gateway and the metrics endpoint), as the deskd-web account.
	$(INSTALL_BIN) $(BUILD_DIR)/deskd-web $(DESTDIR)$(LIBEXECDIR)/deskd/deskd-web
	# One portal login through PAM, started by deskd as root for each (PAM never runs in deskd).
	$(INSTALL_BIN) $(BUILD_DIR)/deskd-auth $(DESTDIR)$(LIBEXECDIR)/deskd/deskd-auth
	# One portal file call, started by deskd as root and run as the desktop's owner.
	$(INSTALL_BIN) $(BUILD_DIR)/deskd-files $(DESTDIR)$(LIBEXECDIR)/deskd/deskd-files
	# Every desktop is a PAM login of service "deskd"; an edited file is kept.
	[ -e $(DESTDIR)$(SYSCONFDIR)/pam.d/deskd ] || install -m 0644 systemd/deskd.pam $(DESTDIR)$(SYSCONFDIR)/pam.d/deskd
	# Every portal login is one of service "deskd-web"; an edited file is kept.
	[ -e $(DESTDIR)$(SYSCONFDIR)/pam.d/deskd-web ] || install -m 0644 systemd/deskd-web.pam $(DESTDIR)$(SYSCONFDIR)/pam.d/deskd-web
	# Templates are shell scripts (#!/bin/sh), so executable, though deskd reads and renders them.
	install -m 0755 $(TEMPLATES) $(DESTDIR)$(TEMPLATEDIR)/
	# The units name the binaries where this install puts them.
	for unit in $(UNITS); do \
		sed -e 's|/usr/local/sbin/deskd|$(SBINDIR)/deskd|g' -e 's|/usr/local/bin/deskctl|$(BINDIR)/deskctl|g' \
			-e 's|/usr/local/libexec|$(LIBEXECDIR)|g' \
			systemd/$$unit > $(DESTDIR)$(UNITDIR)/$$unit && chmod 0644 $(DESTDIR)$(UNITDIR)/$$unit; \
	done
	install -m 0644 systemd/deskd-tmpfiles.conf $(DESTDIR)$(TMPFILESDIR)/deskd.conf
	install -m 0644 systemd/deskd-sysusers.conf $(DESTDIR)$(SYSUSERSDIR)/deskd.conf
	install -m 0644 docs/man/deskctl.1 $(DESTDIR)$(MANDIR)/man1/deskctl.1
	install -m 0644 docs/man/deskd.toml.5 $(DESTDIR)$(MANDIR)/man5/deskd.toml.5
	install -m 0644 docs/man/deskd.8 $(DESTDIR)$(MANDIR)/man8/deskd.8
	install -d $(DESTDIR)$(TEMPLATEDIR)/portal
	install -m 0644 Templates/portal/portal.html Templates/portal/portal.css Templates/portal/portal.js Templates/portal/drop.js $(DESTDIR)$(TEMPLATEDIR)/portal/
	install -m 0644 Templates/deskd.toml $(DESTDIR)$(DOCDIR)/deskd.toml.example
	sed -e 's|/usr/local/bin/deskctl|$(BINDIR)/deskctl|g' Templates/cron.d/deskd-reap > $(DESTDIR)$(DOCDIR)/cron.d-deskd-reap
	install -m 0644 README.md docs/ADMIN.md docs/CLUSTER.md docs/BENCHMARKS.md docs/HACKING.md docs/PROTOCOL.md docs/THREAT_MODEL.md $(DESTDIR)$(DOCDIR)/
	# Completions come from the argument parsers of the binaries just installed. bash-completion
	# sources its files, so the parser's #!/bin/bash line is dropped (after the lines below).
	$(BUILD_DIR)/deskctl --generate-completion-script bash > $(DESTDIR)$(BASHDIR)/deskctl
	$(BUILD_DIR)/deskctl --generate-completion-script zsh > $(DESTDIR)$(ZSHDIR)/_deskctl
	$(BUILD_DIR)/deskctl --generate-completion-script fish > $(DESTDIR)$(FISHDIR)/deskctl.fish
	$(BUILD_DIR)/deskd --generate-completion-script bash > $(DESTDIR)$(BASHDIR)/deskd
	$(BUILD_DIR)/deskd --generate-completion-script zsh > $(DESTDIR)$(ZSHDIR)/_deskd
	$(BUILD_DIR)/deskd --generate-completion-script fish > $(DESTDIR)$(FISHDIR)/deskd.fish
	sed -i '1{/^#!/d}' $(DESTDIR)$(BASHDIR)/deskctl $(DESTDIR)$(BASHDIR)/deskd
	# A configuration file of comments only: the defaults apply until an admin uncomments a key.
	[ -e $(DESTDIR)$(SYSCONFDIR)/deskd/deskd.toml ] || install -m 0644 Templates/deskd.toml $(DESTDIR)$(SYSCONFDIR)/deskd/deskd.toml
	# The web front's account, which the package's sysusers rule makes; here, on this machine.
	[ -n "$(DESTDIR)" ] || getent passwd deskd-web >/dev/null || \
		useradd --system --user-group --no-create-home --home-dir /nonexistent --shell /usr/sbin/nologin deskd-web

uninstall:
	rm -f $(DESTDIR)$(SBINDIR)/deskd $(DESTDIR)$(BINDIR)/deskctl $(DESTDIR)$(LIBEXECDIR)/deskd/deskd-session $(DESTDIR)$(LIBEXECDIR)/deskd/deskd-job $(DESTDIR)$(LIBEXECDIR)/deskd/deskd-web $(DESTDIR)$(LIBEXECDIR)/deskd/deskd-auth $(DESTDIR)$(LIBEXECDIR)/deskd/deskd-files
	-rmdir $(DESTDIR)$(LIBEXECDIR)/deskd
	cmp -s systemd/deskd.pam $(DESTDIR)$(SYSCONFDIR)/pam.d/deskd && rm -f $(DESTDIR)$(SYSCONFDIR)/pam.d/deskd || true
	cmp -s systemd/deskd-web.pam $(DESTDIR)$(SYSCONFDIR)/pam.d/deskd-web && rm -f $(DESTDIR)$(SYSCONFDIR)/pam.d/deskd-web || true
	rm -f $(addprefix $(DESTDIR)$(TEMPLATEDIR)/,$(notdir $(TEMPLATES)))
	rm -f $(addprefix $(DESTDIR)$(TEMPLATEDIR)/portal/,portal.html portal.css portal.js drop.js)
	-rmdir $(DESTDIR)$(TEMPLATEDIR)/portal $(DESTDIR)$(TEMPLATEDIR) $(DESTDIR)$(DATADIR)/deskd
	rm -f $(addprefix $(DESTDIR)$(UNITDIR)/,$(UNITS)) $(DESTDIR)$(TMPFILESDIR)/deskd.conf $(DESTDIR)$(SYSUSERSDIR)/deskd.conf
	rm -f $(DESTDIR)$(MANDIR)/man1/deskctl.1 $(DESTDIR)$(MANDIR)/man5/deskd.toml.5 $(DESTDIR)$(MANDIR)/man8/deskd.8
	rm -rf $(DESTDIR)$(DOCDIR)
	rm -f $(DESTDIR)$(BASHDIR)/deskctl $(DESTDIR)$(ZSHDIR)/_deskctl $(DESTDIR)$(FISHDIR)/deskctl.fish
	rm -f $(DESTDIR)$(BASHDIR)/deskd $(DESTDIR)$(ZSHDIR)/_deskd $(DESTDIR)$(FISHDIR)/deskd.fish
	@echo "Left in place: $(SYSCONFDIR)/deskd (your configuration and templates), an edited $(SYSCONFDIR)/pam.d/deskd, /var/lib/deskd (the audit trail and session logs)."

# deskctl(1) and deskd(8) from the argument parsers plus docs/man/*.sections, deskd.toml(5) from
# the configuration file's key table; see scripts/make-man.
man:
	SWIFT=$(SWIFT) scripts/make-man $(MAN_DATE)

check:
	scripts/check

deb:
	scripts/make-deb
