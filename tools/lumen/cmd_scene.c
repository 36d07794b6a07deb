/* `lumen scene`: writes a deterministic synthetic test image (a utility for demos and tests). */
#include "args.h"
#include "cli.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

static const char usage[] =
    "Usage: lumen scene OUT [--size WxH] [--dtype u8|u16|f32|f16|bf16] [--channels C] [--seed N]\n"
    "\n"
    "Utility: writes a deterministic test scene (gradients, discs, thin lines, a\n"
    "checkerboard, a zone plate and a little fixed-seed noise) to OUT, whose\n"
    "extension picks the format (.npy .png .jpg .jpeg .tif .tiff). Values span the\n"
    "dtype's range (f32: 0..1). Channels: 1 gray, 2 gray+alpha, 3 RGB, 4 RGBA.\n"
    "\n"
    "Options:\n"
    "  --size WxH        width x height, up to 16384 each (default: 640x480)\n"
    "  --dtype D         u8|u16|f32|f16|bf16 (default: u8)\n"
    "  --channels C      1-4 (default: 3)\n"
    "  --seed N          noise seed, 0-2147483647 (default: 1)\n"
    "  -h, --help        show this help\n"
    "\n"
    "Example:\n"
    "  lumen scene out/scene.png --size 800x600\n";

enum { F_SIZE = CLI_FLAG_CMD, F_DTYPE, F_CHANNELS, F_SEED };

static const cli_flag flags[] = {{"size", 0, 1, F_SIZE},
                                 {"dtype", 0, 1, F_DTYPE},
                                 {"channels", 0, 1, F_CHANNELS},
                                 {"seed", 0, 1, F_SEED},
                                 {NULL, 0, 0, 0}};

/* Order matches lumen_dtype, so the index is the enum value. */
static const char *const dtype_names[] = {"u8", "u16", "f32", "f16", "bf16"};

typedef struct scene_spec {
    int w, h, c;
    int dtype;
    int seed;
} scene_spec;

static int on_flag(void *state, int id, const char *name, const char *value)
{
    scene_spec *s = state;
    switch (id) {
    case F_SIZE: return cli_arg_size(name, value, 16384, &s->w, &s->h);
    case F_DTYPE: return cli_arg_choice(name, value, dtype_names, 5, &s->dtype);
    case F_CHANNELS: return cli_arg_int(name, value, 1, 4, &s->c);
    case F_SEED: return cli_arg_int(name, value, 0, 2147483647, &s->seed);
    default: return CLI_EXIT_USAGE;
    }
}

/* ---- drawing: every shape is a function of pixel coordinates only ---------- */

typedef struct disc {
    float cx, cy, r;  /* centre in fractions of width/height, radius of min(w, h) */
    float rgb[3];
} disc;

static const disc discs[] = {{0.22f, 0.30f, 0.17f, {0.90f, 0.15f, 0.10f}},
                             {0.45f, 0.55f, 0.12f, {0.10f, 0.80f, 0.25f}},
                             {0.78f, 0.25f, 0.10f, {0.15f, 0.25f, 0.95f}}};

static void set_rgb(float *rgb, float r, float g, float b)
{
    rgb[0] = r;
    rgb[1] = g;
    rgb[2] = b;
}

static void draw_discs(const scene_spec *s, float x, float y, float *rgb)
{
    float m = (float)(s->w < s->h ? s->w : s->h);
    for (size_t i = 0; i < sizeof discs / sizeof discs[0]; i++) {
        const disc *d = &discs[i];
        float dx = x - d->cx * (float)s->w, dy = y - d->cy * (float)s->h;
        if (dx * dx + dy * dy <= d->r * m * d->r * m) set_rgb(rgb, d->rgb[0], d->rgb[1], d->rgb[2]);
    }
}

/* Checkerboard in the lower right: sharp edges show ringing and border handling. */
static void draw_checker(const scene_spec *s, int x, int y, float *rgb)
{
    if (x < s->w * 55 / 100 || x >= s->w * 95 / 100 || y < s->h * 55 / 100 || y >= s->h * 92 / 100)
        return;
    int cell = (s->w < s->h ? s->w : s->h) / 24;
    if (cell < 2) cell = 2;
    float v = ((x / cell + y / cell) % 2) ? 0.92f : 0.08f;
    set_rgb(rgb, v, v, v);
}

/* Zone plate in the lower left: frequency rising with radius, so blur shows as fading rings. */
static void draw_zone_plate(const scene_spec *s, float x, float y, float *rgb)
{
    float m = (float)(s->w < s->h ? s->w : s->h);
    float r = 0.18f * m, dx = x - 0.22f * (float)s->w, dy = y - 0.78f * (float)s->h;
    float d2 = (dx * dx + dy * dy) / (r * r);
    if (d2 > 1.0f) return;
    float v = 0.5f + 0.5f * cosf(3.14159265f * 0.5f * r * d2);
    set_rgb(rgb, v, v, v);
}

/* One-pixel lines at several angles: the thinnest detail a filter can smear. */
static void draw_lines(const scene_spec *s, float x, float y, float *rgb)
{
    static const float angles[] = {0.0f, 0.35f, 0.8f, 1.3f, 1.5707964f};
    float cx = 0.62f * (float)s->w, cy = 0.12f * (float)s->h;
    float len = 0.25f * (float)(s->w < s->h ? s->w : s->h);
    for (size_t i = 0; i < sizeof angles / sizeof angles[0]; i++) {
        float ux = cosf(angles[i]), uy = sinf(angles[i]);
        float along = (x - cx) * ux + (y - cy) * uy, across = (x - cx) * uy - (y - cy) * ux;
        if (along >= 0 && along <= len && fabsf(across) < 0.6f) set_rgb(rgb, 0.97f, 0.97f, 0.9f);
    }
}

static void scene_rgb(const scene_spec *s, int x, int y, float *rgb)
{
    float fx = (float)x + 0.5f, fy = (float)y + 0.5f;
    float u = fx / (float)s->w, v = fy / (float)s->h;
    set_rgb(rgb, 0.15f + 0.6f * u, 0.2f + 0.5f * v, 0.75f - 0.5f * u * v);
    draw_checker(s, x, y, rgb);
    draw_zone_plate(s, fx, fy, rgb);
    draw_discs(s, fx, fy, rgb);
    draw_lines(s, fx, fy, rgb);
}

/* ---- conversion and output ------------------------------------------------- */

/* Maps RGB to the requested channels: gray for 1-2, opaque alpha for 2 and 4. */
static void to_channels(const float *rgb, int c, float *px)
{
    float gray = 0.299f * rgb[0] + 0.587f * rgb[1] + 0.114f * rgb[2];
    if (c <= 2) px[0] = gray;
    for (int i = 0; c >= 3 && i < 3; i++) px[i] = rgb[i];
    if (c == 2 || c == 4) px[c - 1] = 1.0f;
}

static void store(void *data, int dtype, size_t i, float v)
{
    v = v < 0.0f ? 0.0f : v > 1.0f ? 1.0f : v;
    if (dtype == LUMEN_U8)
        ((uint8_t *)data)[i] = (uint8_t)lrintf(v * 255.0f);
    else if (dtype == LUMEN_U16)
        ((uint16_t *)data)[i] = (uint16_t)lrintf(v * 65535.0f);
    else
        lumen_element_set((char *)data + i * lumen_dtype_size(dtype), dtype, v);
}

static void render(const scene_spec *s, void *data)
{
    uint64_t rng = (uint64_t)s->seed;
    size_t i = 0;
    for (int y = 0; y < s->h; y++) {
        for (int x = 0; x < s->w; x++) {
            float rgb[3], px[4];
            scene_rgb(s, x, y, rgb);
            to_channels(rgb, s->c, px);
            for (int ch = 0; ch < s->c; ch++) {
                /* Noise on colour only: alpha stays exactly opaque. */
                int alpha = (s->c == 2 || s->c == 4) && ch == s->c - 1;
                float noise = alpha ? 0.0f : 0.06f * (cli_lcg_unit(&rng) - 0.5f);
                store(data, s->dtype, i++, px[ch] + noise);
            }
        }
    }
}

int cmd_scene(int argc, char **argv)
{
    static const char *const names[] = {"OUT"};
    const cli_command cmd = {"scene", flags, on_flag, names, 1, 0};
    scene_spec s = {640, 480, 3, LUMEN_U8, 1};
    const char *pos[1];
    int rc = cli_parse(&cmd, argc, argv, &s, pos);
    if (rc == CLI_HELP) return cli_print_usage(usage);
    if (rc) return rc;
    lumen_dtype dtype = (lumen_dtype)s.dtype;
    void *data = malloc((size_t)s.w * (size_t)s.h * (size_t)s.c * lumen_dtype_size(dtype));
    if (!data) {
        cli_error("scene", "out of memory for a %dx%dx%d image", s.w, s.h, s.c);
        return CLI_EXIT_FAIL;
    }
    render(&s, data);
    lumen_image img = lumen_image_nhwc(data, dtype, 1, s.h, s.w, s.c);
    lumen_status st = lumen_write_image(pos[0], &img);
    free(data);
    return st ? cli_lib_error(pos[0], st) : CLI_EXIT_OK;
}
