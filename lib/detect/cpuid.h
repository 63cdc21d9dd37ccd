/* Raw CPUID data and its decoding into ISA extension names (x86). Internal. */
#ifndef FP_CPUID_H
#define FP_CPUID_H

#include <stdint.h>

#include "fpull/error.h"

/* One CPUID result. Registers in the order eax, ebx, ecx, edx. */
struct fp_cpuid_leaf {
  uint32_t leaf, subleaf;
  uint32_t r[4];
};

enum { FP_EAX = 0, FP_EBX = 1, FP_ECX = 2, FP_EDX = 3 };

/* Every leaf and subleaf of a whole dump of a real CPU (a Sapphire Rapids has 76, a Granite
 * Rapids with every cache, topology and PT subleaf some 120; leaf 0xD, 0x10, 0x12, 0x17, 0x18
 * and 0x8000001D are listed per subleaf), with room to spare, yet bounded: a dump is input. */
#define FP_CPUID_MAX_LEAVES 1024

/* The leaves the decoder reads (0, 1, 7.0, 7.1, 0xD.1, 0x14.0, 0x19, 0x1E.1, 0x24.0,
 * 0x80000000, 0x80000001, 0x80000008, 0x80000021) plus whatever else a dump holds; a leaf that is
 * absent reads as zeros. xcr0 is meaningful only when CPUID.1:ECX.OSXSAVE is set. */
struct fp_cpuid_raw {
  struct fp_cpuid_leaf leaves[FP_CPUID_MAX_LEAVES];
  unsigned n;
  uint64_t xcr0;
};

/* Records one leaf (replacing an earlier one with the same leaf and subleaf).
 * Returns -1 when the table is full. */
int fp_cpuid_raw_set(struct fp_cpuid_raw *raw, uint32_t leaf, uint32_t subleaf, uint32_t eax,
                     uint32_t ebx, uint32_t ecx, uint32_t edx);
/* The registers of leaf.subleaf, or NULL when the dump does not have it. */
const uint32_t *fp_cpuid_raw_get(const struct fp_cpuid_raw *raw, uint32_t leaf, uint32_t subleaf);

/* Parses the text dump format of tests/fixtures/cpuid: one "LEAF SUBLEAF EAX EBX ECX EDX"
 * line per leaf (hexadecimal, 0x optional), one "xcr0 VALUE" line, '#' starts a comment.
 * Errors: FPULL_EUSAGE naming the line. */
int fp_cpuid_raw_parse(struct fp_cpuid_raw *out, const char *text, fpull_err *err);

/* ISA names (as in data/cputags.yaml) that the CPU reports and the OS enables, sorted,
 * NULL-terminated, caller frees with fpull_strv_free. Never NULL. */
char **fp_cpuid_decode(const struct fp_cpuid_raw *raw);

/* CPUID.1's display family, model and stepping (extended fields folded in as the SDM and
 * the APM say) and its hypervisor bit; zeros without leaf 1. */
void fp_cpuid_signature(const struct fp_cpuid_raw *raw, unsigned *family, unsigned *model,
                        unsigned *stepping, int *hypervisor);

/* Every name fp_cpuid_decode can return, sorted, NULL-terminated (static). */
const char *const *fp_cpuid_known_isa(void);

#endif
