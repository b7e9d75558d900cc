/* Debian's libcrypto (OpenSSL 3), for one HMAC-SHA256: the cluster hop's proofs. */
#include <openssl/evp.h>
#include <openssl/hmac.h>
