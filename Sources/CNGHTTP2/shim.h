// libnghttp2 (the HTTP/2 library of curl and Apache): HPACK, frames, flow control and RFC 9113's checks of
// requests. Its API is plain functions and structs, so nothing is added here.
#include <nghttp2/nghttp2.h>
