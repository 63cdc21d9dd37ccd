/* AT_HWCAP / AT_HWCAP2 decoding into ISA names (arm64, ppc64le). Internal.
 *
 * Pure functions over the two words, with no allocation and nothing from the rest of
 * libfpull, so that tests/qemu can cross-build this file alone into a static program and
 * run it under qemu-user's CPU models. */
#ifndef FP_HWCAP_H
#define FP_HWCAP_H

#include <stddef.h>
#include <stdint.h>

/* The most names one call can return. */
#define FP_HWCAP_MAX 64

/* Fills out[] with the ISA names (as in data/cputags.yaml: the compiler's feature macro in
 * lower case) that hwcap and hwcap2 stand for, in table order; returns how many. */
size_t fp_hwcap_arm64(uint64_t hwcap, uint64_t hwcap2, const char **out, size_t max);
size_t fp_hwcap_ppc64(uint64_t hwcap, uint64_t hwcap2, const char **out, size_t max);

/* The POWER level ("power8", "power9", "power10") from AT_PLATFORM (which may be NULL, or
 * carry a suffix such as "power9+"), else from the ISA level bits of AT_HWCAP2; NULL when
 * neither says. */
const char *fp_hwcap_ppc64_level(const char *platform, uint64_t hwcap2);

/* The i-th name the decoder of that architecture can return (a name may repeat), NULL past
 * the end. */
const char *fp_hwcap_arm64_name(size_t i);
const char *fp_hwcap_ppc64_name(size_t i);

#endif
