/* Blurs and sharpens a generated RGB image: a vertical edge, black left, grey (200) right. */
#include <lumen.h>
#include <stdio.h>

enum { W = 64, H = 48, C = 3 };
static unsigned char pixels[H][W][C], out[H][W][C];

int main(void)
{
    for (int y = 0; y < H; y++)
        for (int x = 0; x < W; x++)
            for (int c = 0; c < C; c++)
                pixels[y][x][c] = x < W / 2 ? 0 : 200;

    lumen_context *ctx;
    if (lumen_context_create(&ctx)) { /* threads: lumen_default_threads() */
        fprintf(stderr, "context: %s\n", lumen_last_error());
        return 1;
    }
    /* Views: interleaved H x W x 3 here; planar, batched and strided views work the same. */
    lumen_image src = lumen_image_nhwc(pixels, LUMEN_U8, 1, H, W, C);
    lumen_image dst = lumen_image_nhwc(out, LUMEN_U8, 1, H, W, C);
    lumen_run_info info;
    if (lumen_gaussian_blur(ctx, &src, &dst, 0, 0, 2.0, 0.0, LUMEN_BORDER_REFLECT101, 0.0f,
                            &info)) {
        fprintf(stderr, "blur: %s\n", lumen_last_error());
        return 1;
    }
    printf("lumen %s, blur (%s on %s):", lumen_version(), lumen_method_name(info.method),
           info.device);
    for (int x = W / 2 - 2; x < W / 2 + 2; x++)
        printf(" %d", out[H / 2][x][0]);

    float k[9] = {0, -1, 0, -1, 5, -1, 0, -1, 0};            /* sharpen */
    lumen_filter_options o = lumen_filter_options_default(); /* reflect, centre anchor, auto */
    if (lumen_filter2d(ctx, &src, &dst, k, 3, 3, &o, NULL)) {
        fprintf(stderr, "sharpen: %s\n", lumen_last_error());
        return 1;
    }
    printf("\nsharpen:");
    for (int x = W / 2 - 2; x < W / 2 + 2; x++)
        printf(" %d", out[H / 2][x][0]);
    printf("\n");
    lumen_context_destroy(ctx);
    return 0;
}
