/* libFuzzer harness: the EXR decoder through lumen_read_image (see fuzz_io.h for the checks).
 * Round trips compare shapes only: a half file read as f32 may be written back as f32. */
#define FUZZ_EXT ".exr"
#include "fuzz_io.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    return fuzz_decode_image(data, size, 0);
}
