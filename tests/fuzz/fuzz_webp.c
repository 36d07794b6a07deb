/* libFuzzer harness: the WebP decoder through lumen_read_image (see fuzz_io.h for the checks).
 * Round trips compare shapes only: the writer encodes lossy by default. */
#define FUZZ_EXT ".webp"
#include "fuzz_io.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    return fuzz_decode_image(data, size, 0);
}
