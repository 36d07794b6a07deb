/* The CPU resize (resize.c) and its row kernels (resize_kernels.h), compiled per ISA. */
#ifndef LUMEN_RESIZE_CPU_H
#define LUMEN_RESIZE_CPU_H

#include "internal.h"

/* One ISA's row kernels. */
typedef struct lumen_resize_kernels {
    const char *isa;
    void (*load_row)(const void *src, lumen_dtype t, int64_t n, float *out);
    void (*store_row)(const float *v, int64_t n, lumen_dtype t, void *dst);
    /* streamed: in comes from memory, read once (else a row just written, in cache) */
    void (*hpass)(const void *in, lumen_dtype t, int C, const lumen_resize_axis *x, int streamed,
                  float *out);
    /* Pillow's 8-bit rule: one contiguous byte row horizontally; the vertical sums */
    void (*pillow_hrow)(const uint8_t *row, int C, const lumen_resize_axis *x, uint8_t *out);
    void (*pillow_vrow)(const uint8_t *const *rows, const int32_t *w, int K, int64_t n,
                        int32_t *acc, uint8_t *out);
    void (*vpass)(const void *const *rows, lumen_dtype t, const float *w, int K, int64_t n,
                  float *acc);
    /* vpass of f32 rows stored as dtype td into a contiguous dst row; 0: not for this td */
    int (*vpass_to)(const float *const *rows, const float *w, int K, int64_t n, lumen_dtype td,
                    void *dst);
    /* u8, both axes an exact 2:1 box (weights 1/2, 1/2): n output bytes of C interleaved
     * channels from rows r0, r1 (2n bytes each), the 2x2 sum rounded to nearest, ties to even */
    void (*box2_u8)(const uint8_t *r0, const uint8_t *r1, int C, int64_t n, uint8_t *out);
    /* the same for u16 (sums in 32 bits) */
    void (*box2_u16)(const uint16_t *r0, const uint16_t *r1, int C, int64_t n, uint16_t *out);
    /* the same for f32/f16/bf16 (ts in, td out) with 2-tap tables, the separable path's bits;
     * 0: not in this build, C or dtypes (n 0: asks) */
    int (*box2_float)(const void *r0, const void *r1, lumen_dtype ts, int C, int64_t n,
                      lumen_dtype td, void *out);
    /* Pillow's 8-bit horizontal pass as byte dot products (up to 4 channels, where the build
     * and CPU have AVX-512 VNNI and VBMI: pillow_dp_ok), from a table of at most
     * pillow_dp_entry bytes per output pixel built by pillow_dp_table, which returns P, the
     * output pixels per step */
    int (*pillow_dp_ok)(int C);
    int64_t (*pillow_dp_entry)(int K);
    int (*pillow_dp_table)(int C, const lumen_resize_axis *x, int8_t *tab);
    void (*pillow_hrow_dp)(const uint8_t *row, int C, const lumen_resize_axis *x, const int8_t *tab,
                           int P, uint8_t *out);
} lumen_resize_kernels;

#define RESIZE_DECLARE(sfx)                                                                        \
    void lumen_resize_load_row_##sfx(const void *src, lumen_dtype t, int64_t n, float *out);       \
    void lumen_resize_store_row_##sfx(const float *v, int64_t n, lumen_dtype t, void *dst);        \
    void lumen_resize_hpass_##sfx(const void *in, lumen_dtype t, int C,                            \
                                  const lumen_resize_axis *x, int streamed, float *out);           \
    void lumen_resize_pillow_hrow_##sfx(const uint8_t *row, int C, const lumen_resize_axis *x,     \
                                        uint8_t *out);                                             \
    void lumen_resize_pillow_vrow_##sfx(const uint8_t *const *rows, const int32_t *w, int K,       \
                                        int64_t n, int32_t *acc, uint8_t *out);                    \
    void lumen_resize_vpass_##sfx(const void *const *rows, lumen_dtype t, const float *w, int K,   \
                                  int64_t n, float *acc);                                          \
    int lumen_resize_vpass_to_##sfx(const float *const *rows, const float *w, int K, int64_t n,    \
                                    lumen_dtype td, void *dst);                                    \
    int lumen_resize_pillow_dp_ok_##sfx(int C);                                                    \
    int64_t lumen_resize_pillow_dp_entry_##sfx(int K);                                             \
    int lumen_resize_pillow_dp_table_##sfx(int C, const lumen_resize_axis *x, int8_t *tab);        \
    void lumen_resize_pillow_hrow_dp_##sfx(const uint8_t *row, int C, const lumen_resize_axis *x,  \
                                           const int8_t *tab, int P, uint8_t *out);                \
    void lumen_resize_box2_u8_##sfx(const uint8_t *r0, const uint8_t *r1, int C, int64_t n,        \
                                    uint8_t *out);                                                 \
    void lumen_resize_box2_u16_##sfx(const uint16_t *r0, const uint16_t *r1, int C, int64_t n,     \
                                     uint16_t *out);                                               \
    int lumen_resize_box2_float_##sfx(const void *r0, const void *r1, lumen_dtype ts, int C,       \
                                      int64_t n, lumen_dtype td, void *out);
RESIZE_DECLARE(generic)
RESIZE_DECLARE(avx2)
RESIZE_DECLARE(avx512)

#endif
