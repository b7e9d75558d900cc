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

/* ---- deskd-auth: an interactive conversation over two descriptors ---- */

#include <errno.h>
#include <stdio.h>

struct auth_channel {
    int in_fd, out_fd;
    char pending[8192];
    size_t held;
    int rounds;
    char last_message[512];
};

static int write_all(int fd, const char *bytes, size_t length) {
    while (length > 0) {
        ssize_t n = write(fd, bytes, length);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) return -1;
        bytes += n;
        length -= (size_t)n;
    }
    return 0;
}

/* "KIND HEX\n": the text hex-encoded, at most 1024 bytes of it. */
static int send_line(struct auth_channel *channel, const char *kind, const char *text) {
    static const char digits[] = "0123456789abcdef";
    char line[8 + 2 * 1024 + 2];
    size_t at = 0;
    size_t kind_length = strlen(kind);
    memcpy(line, kind, kind_length);
    at = kind_length;
    if (text != NULL) {
        line[at++] = ' ';
        for (size_t i = 0; text[i] != '\0' && i < 1024; i++) {
            unsigned char c = (unsigned char)text[i];
            line[at++] = digits[c >> 4];
            line[at++] = digits[c & 15];
        }
    }
    line[at++] = '\n';
    return write_all(channel->out_fd, line, at);
}

static int hex_value(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    return -1;
}

/* Reads "A HEX\n" and decodes it into a fresh string; NULL on EOF or anything else. */
static char *read_answer(struct auth_channel *channel) {
    for (;;) {
        char *newline = memchr(channel->pending, '\n', channel->held);
        if (newline != NULL) {
            size_t length = (size_t)(newline - channel->pending);
            char *answer = NULL;
            if (length >= 2 && channel->pending[0] == 'A' && channel->pending[1] == ' ' && (length - 2) % 2 == 0) {
                size_t bytes = (length - 2) / 2;
                answer = calloc(bytes + 1, 1);
                for (size_t i = 0; answer != NULL && i < bytes; i++) {
                    int high = hex_value(channel->pending[2 + 2 * i]), low = hex_value(channel->pending[3 + 2 * i]);
                    if (high < 0 || low < 0 || (high == 0 && low == 0)) { free(answer); answer = NULL; break; }
                    answer[i] = (char)(high << 4 | low);
                }
            } else if (length == 1 && channel->pending[0] == 'A') {
                answer = calloc(1, 1);   /* an empty answer */
            }
            memmove(channel->pending, newline + 1, channel->held - length - 1);
            channel->held -= length + 1;
            return answer;
        }
        if (channel->held == sizeof channel->pending) return NULL;
        ssize_t n = read(channel->in_fd, channel->pending + channel->held, sizeof channel->pending - channel->held);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) return NULL;
        channel->held += (size_t)n;
    }
}

static int interactive_conversation(int count, const struct pam_message **messages, struct pam_response **responses, void *context) {
    struct auth_channel *channel = context;
    if (count <= 0 || count > PAM_MAX_NUM_MSG) return PAM_CONV_ERR;
    /* A module that asks without end is a module deskd stops listening to. */
    if (++channel->rounds > 32) return PAM_CONV_ERR;
    struct pam_response *reply = calloc((size_t)count, sizeof *reply);
    if (reply == NULL) return PAM_BUF_ERR;
    for (int i = 0; i < count; i++) {
        const char *text = messages[i]->msg != NULL ? messages[i]->msg : "";
        switch (messages[i]->msg_style) {
        case PAM_PROMPT_ECHO_OFF:
        case PAM_PROMPT_ECHO_ON:
            if (send_line(channel, messages[i]->msg_style == PAM_PROMPT_ECHO_OFF ? "P0" : "P1", text) != 0) goto failed;
            reply[i].resp = read_answer(channel);
            if (reply[i].resp == NULL) goto failed;
            break;
        case PAM_ERROR_MSG:
        case PAM_TEXT_INFO:
            strncpy(channel->last_message, text, sizeof channel->last_message - 1);
            channel->last_message[sizeof channel->last_message - 1] = '\0';
            if (send_line(channel, messages[i]->msg_style == PAM_ERROR_MSG ? "E" : "I", text) != 0) goto failed;
            break;
        default:
            goto failed;
        }
    }
    *responses = reply;
    return PAM_SUCCESS;
failed:
    for (int i = 0; i < count; i++) {
        if (reply[i].resp != NULL) {
            explicit_bzero(reply[i].resp, strlen(reply[i].resp));
            free(reply[i].resp);
        }
    }
    free(reply);
    return PAM_CONV_ERR;
}

int deskd_auth_run(const char *service, const char *user, const char *remote_host, int in_fd, int out_fd) {
    static struct auth_channel channel;
    memset(&channel, 0, sizeof channel);
    channel.in_fd = in_fd;
    channel.out_fd = out_fd;
    struct pam_conv conversation = { interactive_conversation, &channel };
    pam_handle_t *handle = NULL;
    int status = pam_start(service, user, &conversation, &handle);
    if (status == PAM_SUCCESS && remote_host != NULL && remote_host[0] != '\0') status = pam_set_item(handle, PAM_RHOST, remote_host);
    if (status == PAM_SUCCESS) status = pam_authenticate(handle, PAM_DISALLOW_NULL_AUTHTOK);
    if (status == PAM_SUCCESS) {
        status = pam_acct_mgmt(handle, PAM_DISALLOW_NULL_AUTHTOK);
        /* An expired password is changed here, in the same conversation, as login(1) does. */
        if (status == PAM_NEW_AUTHTOK_REQD) status = pam_chauthtok(handle, PAM_CHANGE_EXPIRED_AUTHTOK);
    }
    if (status == PAM_SUCCESS) {
        send_line(&channel, "OK", NULL);
    } else {
        char kind[16];
        snprintf(kind, sizeof kind, "NO %d", status);
        const char *words = channel.last_message[0] != '\0' ? channel.last_message : pam_strerror(handle, status);
        send_line(&channel, kind, words);
    }
    if (handle != NULL) pam_end(handle, status);
    explicit_bzero(channel.pending, sizeof channel.pending);
    return status;
}
