#include <rfb/rfbclient.h>
