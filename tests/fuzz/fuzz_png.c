/* libFuzzer harness: the PNG decoder through lumen_read_image (see fuzz_io.h for the checks). */
#define FUZZ_EXT ".png"
#include "fuzz_io.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    return fuzz_decode_image(data, size, 1);
}
