/*
 * libkernels: fetch compute kernels from the Hugging Face Kernel Hub and
 * load them into this process.
 *
 * One header per concept lives under kernels/; this one includes them all.
 * Conventions: functions return 0 or a negative KERNELS_E* code and leave a
 * thread-local message in kernels_error_last(); every pointer's owner is
 * documented where it is returned; all functions are thread-safe.
 */
#ifndef KERNELS_H
#define KERNELS_H

#include "kernels/common.h"
#include "kernels/system.h"
#include "kernels/options.h"
#include "kernels/revision.h"
#include "kernels/variant.h"
#include "kernels/kernel.h"
#include "kernels/download.h"
#include "kernels/lock.h"
#include "kernels/get.h"
#include "kernels/info.h"
#include "kernels/project.h"
#include "kernels/wheel.h"
#include "kernels/tvm_ffi.h"
#include "kernels/signature.h"

#endif
