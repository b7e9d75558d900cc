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

/// deskd-auth: one web login through PAM (service `service`, normally "deskd-web") for `user`
/// from `remote_host` (PAM_RHOST): pam_authenticate (no empty password), pam_acct_mgmt, and
/// pam_chauthtok when the account says the password must change first. The conversation is
/// lines on `in_fd` and `out_fd`, every text hex-encoded so no byte of it can be taken for the
/// protocol: out "P0 HEX" (a prompt, not echoed), "P1 HEX" (echoed), "I HEX" (information),
/// "E HEX" (an error message); in "A HEX" (the answer to the last prompt); EOF on `in_fd`
/// cancels. The last line out is "OK" or "NO CODE HEX" (PAM's code and the last message a
/// module gave, else PAM's own words). Returns the PAM code it ended with (PAM_SUCCESS: 0).
int deskd_auth_run(const char *service, const char *user, const char *remote_host, int in_fd, int out_fd);

#endif
