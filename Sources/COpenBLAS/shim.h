// OpenBLAS's C interface. On Debian, `libopenblas-dev` installs cblas.h under the multiarch
// include directory; pkg-config (openblas.pc) adds the OpenBLAS-specific path as well.
#ifndef TYPESET_COPENBLAS_SHIM_H
#define TYPESET_COPENBLAS_SHIM_H
#include <cblas.h>
#endif
