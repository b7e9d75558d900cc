#define _GNU_SOURCE
#include "CDeskSession.h"
#include <stdlib.h>
#include <string.h>

static char last_message[512];

/* deskd-session is single-threaded: a static buffer is enough. */
static int deskd_conversation(int count, const struct pam_message **messages, struct pam_response **responses, void *context) {
    (void)context;
    if (count <= 0 || count > PAM_MAX_NUM_MSG) return PAM_CONV_ERR;
    struct pam_response *reply = calloc((size_t)count, sizeof *reply);
    if (reply == NULL) return PAM_BUF_ERR;
    for (int i = 0; i < count; i++) {
        switch (messages[i]->msg_style) {
        case PAM_ERROR_MSG:
        case PAM_TEXT_INFO:
            if (messages[i]->msg != NULL) {
                strncpy(last_message, messages[i]->msg, sizeof last_message - 1);
                last_message[sizeof last_message - 1] = '\0';
            }
            break;
        default:
            /* A prompt: no one is there to answer it. */
            free(reply);
            return PAM_CONV_ERR;
        }
    }
    *responses = reply;
    return PAM_SUCCESS;
}

int deskd_pam_start(const char *service, const char *user, pam_handle_t **handle) {
    static const struct pam_conv conversation = { deskd_conversation, NULL };
    last_message[0] = '\0';
    return pam_start(service, user, &conversation, handle);
}

const char *deskd_pam_last_message(void) {
    return last_message;
}

int deskd_pam_set_string(pam_handle_t *handle, int item, const char *value) {
    return pam_set_item(handle, item, value);
}

#include <signal.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <unistd.h>

int deskd_session_signalfd(void) {
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGCHLD);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGHUP);
    if (sigprocmask(SIG_BLOCK, &set, NULL) != 0) return -1;
    return signalfd(-1, &set, SFD_CLOEXEC | SFD_NONBLOCK);
}

int deskd_read_signal(int fd) {
    struct signalfd_siginfo info;
    ssize_t n = read(fd, &info, sizeof info);
    return n == (ssize_t)sizeof info ? (int)info.ssi_signo : -1;
}
