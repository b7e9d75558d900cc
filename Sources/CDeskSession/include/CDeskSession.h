#ifndef CDESKSESSION_H
#define CDESKSESSION_H

#include <security/pam_appl.h>

/// pam_start with deskd's conversation: nothing is asked of anyone (deskd has already decided
/// who may have a desktop), so every prompt fails; the modules' messages ("Your account has
/// expired") are kept, the last one for `deskd_pam_last_message`.
int deskd_pam_start(const char *service, const char *user, pam_handle_t **handle);

/// The last message a PAM module gave, or "" if none.
const char *deskd_pam_last_message(void);

/// pam_set_item for a string item (PAM_TTY, PAM_XDISPLAY, PAM_RUSER...): Swift cannot pass a
/// `const void *` item by itself without help.
int deskd_pam_set_string(pam_handle_t *handle, int item, const char *value);

/// A signalfd for SIGCHLD, SIGTERM, SIGINT and SIGHUP, which are blocked from now on.
int deskd_session_signalfd(void);

/// Reads one signal from the signalfd: its number, or -1.
int deskd_read_signal(int fd);

#endif
