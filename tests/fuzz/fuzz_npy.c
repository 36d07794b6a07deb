/* libFuzzer harness: the NPY decoder, both of its readers on each input: the image reader
 * (2-D/3-D as HWC, from memory) and lumen_read_tensor (1-4-D as NCHW, from a file). See
 * fuzz_io.h. */
#define FUZZ_EXT ".npy"
#include "fuzz_io.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fuzz_decode_image(data, size, 1);

    /* lumen_read_tensor reads by path only */
    fuzz_write_input(data, size);
    lumen_image t;
    const lumen_status s = lumen_read_tensor(fuzz_in, &t);
    if (s != LUMEN_OK) {
        fuzz_check_failure(s, &t);
        return 0;
    }
    /* Tensors may hold many images; each still within the pixel limit. */
    fuzz_check_image(&t, INT64_MAX);
    FUZZ_CHECK(t.stride_w == 1 && t.stride_h == t.w && t.stride_c == t.h * t.w &&
                   t.stride_n == t.c * t.h * t.w,
               "tensor not contiguous NCHW");
    if (t.n * t.c * t.h * t.w <= FUZZ_ROUNDTRIP_ELEMS) {
        const lumen_status ws = lumen_write_tensor(fuzz_out, &t);
        if (ws == LUMEN_OK) {
            lumen_image back;
            FUZZ_CHECK(lumen_read_tensor(fuzz_out, &back) == LUMEN_OK, "read back: %s",
                       lumen_last_error());
            FUZZ_CHECK(back.n == t.n && back.c == t.c && back.h == t.h && back.w == t.w &&
                           back.dtype == t.dtype,
                       "tensor round trip changed the shape or dtype");
            const size_t bytes = (size_t)(t.n * t.c * t.h * t.w) * lumen_dtype_size(t.dtype);
            FUZZ_CHECK(memcmp(back.data, t.data, bytes) == 0, "tensor round trip changed values");
            lumen_image_free(&back);
        } else {
            FUZZ_CHECK(ws != LUMEN_ERR_INTERNAL && lumen_last_error()[0], "write_tensor: %s",
                       lumen_last_error());
        }
    }
    lumen_image_free(&t);
    return 0;
}
