/* The C API the Swift binding imports: the public header (the include folder
 * comes from the build flags, see Package.swift). */
#include "nnc/ccv_nnc.h"
