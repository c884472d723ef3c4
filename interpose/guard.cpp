#include "interpose/guard.h"

namespace tcgd::interpose {

constinit thread_local bool t_in_hook __attribute__((tls_model("initial-exec"))) = false;

}  // namespace tcgd::interpose
