/*
 * The op descriptor table (include/lumen_ops.h): every entry is complete and consistent (names
 * unique, defaults inside ranges, choices present, invoke and output_shape set), lookups work,
 * argument checks name the argument, and invoke through tagged values gives the typed call's
 * answer (filter2d and conv2d).
 */
#define _POSIX_C_SOURCE 200809L /* mkdtemp */

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "lumen.h"
#include "lumen_ops.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int is_snake_case(const char *s)
{
    if (!s || !*s || !(s[0] >= 'a' && s[0] <= 'z')) return 0;
    for (; *s; s++)
        if (!((*s >= 'a' && *s <= 'z') || (*s >= '0' && *s <= '9') || *s == '_')) return 0;
    return 1;
}

static int is_array(lumen_arg_type t)
{
    return t == LUMEN_ARG_IMAGE || t == LUMEN_ARG_TENSOR || t == LUMEN_ARG_KERNEL ||
           t == LUMEN_ARG_VECTOR;
}

static int n_choices(const lumen_arg_desc *a)
{
    int n = 0;
    while (a->choices && a->choices[n].name)
        n++;
    return n;
}

static void check_default(const lumen_op_desc *op, const lumen_arg_desc *a)
{
    if ((a->flags & (LUMEN_ARG_REQUIRED | LUMEN_ARG_NULLABLE)) || is_array(a->type)) return;
    const int pair = a->type == LUMEN_ARG_INT_PAIR;
    for (int k = 0; k <= pair; k++) {
        const double d = a->def[k];
        if (a->type == LUMEN_ARG_ENUM) {
            int found = 0;
            for (int c = 0; c < n_choices(a); c++)
                found |= a->choices[c].value == (int)d;
            if (!found) fail_msg("%s.%s: default %g is not a choice", op->name, a->name, d);
        } else if (!(d >= a->min && d <= a->max)) {
            fail_msg("%s.%s: default %g outside %g..%g", op->name, a->name, d, a->min, a->max);
        }
        if (a->type != LUMEN_ARG_REAL && d != floor(d))
            fail_msg("%s.%s: integer default %g", op->name, a->name, d);
    }
}

static void check_arg(const lumen_op_desc *op, int i)
{
    const lumen_arg_desc *a = &op->args[i];
    if (!is_snake_case(a->name)) fail_msg("%s: argument %d has name '%s'", op->name, i, a->name);
    for (int j = 0; j < i; j++)
        if (!strcmp(op->args[j].name, a->name)) fail_msg("%s.%s twice", op->name, a->name);
    if (!a->help || !*a->help) fail_msg("%s.%s: no help", op->name, a->name);
    if ((a->type == LUMEN_ARG_ENUM) != (n_choices(a) > 0))
        fail_msg("%s.%s: choices iff enum", op->name, a->name);
    if ((a->type == LUMEN_ARG_INT || a->type == LUMEN_ARG_INT_PAIR || a->type == LUMEN_ARG_REAL) &&
        !(a->min <= a->max))
        fail_msg("%s.%s: empty range", op->name, a->name);
    if ((a->flags & LUMEN_ARG_NULLABLE) && !a->def_text)
        fail_msg("%s.%s: nullable without def_text saying what absent means", op->name, a->name);
    if ((a->flags & LUMEN_ARG_REQUIRED) && (a->flags & LUMEN_ARG_NULLABLE))
        fail_msg("%s.%s: required and nullable", op->name, a->name);
    /* Required arguments come first, so every front end can take them by position. */
    if ((a->flags & LUMEN_ARG_REQUIRED) && i > 0 && !(op->args[i - 1].flags & LUMEN_ARG_REQUIRED))
        fail_msg("%s.%s: required after an optional argument", op->name, a->name);
    check_default(op, a);
}

static void test_table_integrity(void **state)
{
    (void)state;
    const int n = lumen_op_count();
    assert_true(n >= 6);
    assert_null(lumen_op_at(-1));
    assert_null(lumen_op_at(n));
    for (int i = 0; i < n; i++) {
        const lumen_op_desc *op = lumen_op_at(i);
        assert_non_null(op);
        if (!is_snake_case(op->name)) fail_msg("op %d: name '%s'", i, op->name);
        assert_true(op->command && *op->command && op->summary && *op->summary);
        assert_true(op->help && *op->help && op->output_help && *op->output_help);
        assert_non_null(op->invoke);
        assert_non_null(op->output_shape);
        assert_true(op->output == LUMEN_ARG_IMAGE || op->output == LUMEN_ARG_TENSOR);
        assert_true(op->n_args >= 1 && op->args);
        assert_true(is_array(op->args[0].type) && (op->args[0].flags & LUMEN_ARG_REQUIRED));
        for (int j = 0; j < i; j++) {
            const lumen_op_desc *o = lumen_op_at(j);
            if (!strcmp(o->name, op->name) || !strcmp(o->command, op->command) ||
                !strcmp(o->name, op->command) || !strcmp(o->command, op->name))
                fail_msg("ops %d and %d share a name", i, j);
        }
        for (int a = 0; a < op->n_args; a++)
            check_arg(op, a);
        assert_ptr_equal(lumen_op_find(op->name), op);
        assert_ptr_equal(lumen_op_find(op->command), op);
    }
    assert_null(lumen_op_find("no_such_op"));
    assert_null(lumen_op_find(NULL));
    assert_ptr_equal(lumen_op_find("conv"), lumen_op_find("conv2d"));
}

static void test_limits(void **state)
{
    (void)state;
    assert_int_equal(LUMEN_MAX_KSIZE, 1 << 16);
    lumen_context *ctx;
    assert_int_equal(lumen_context_create(&ctx), LUMEN_OK);
    assert_int_equal(lumen_context_set_threads(ctx, LUMEN_MAX_THREADS), LUMEN_OK);
    assert_int_not_equal(lumen_context_set_threads(ctx, LUMEN_MAX_THREADS + 1), LUMEN_OK);
    lumen_context_destroy(ctx);
    float k[1];
    assert_int_not_equal(lumen_gaussian_kernel(LUMEN_MAX_KSIZE + 1, 1.0, k), LUMEN_OK);
}

static void test_check_args(void **state)
{
    (void)state;
    const lumen_op_desc *op = lumen_op_find("conv2d");
    lumen_value v[16];
    lumen_op_values_init(op, v);
    lumen_out_shape shape;
    assert_int_equal(lumen_op_output_shape(op, v, &shape), LUMEN_ERR_INVALID_ARGUMENT);
    assert_non_null(strstr(lumen_last_error(), "x: required"));
    float xd[1 * 2 * 5 * 5] = {0}, wd[3 * 2 * 3 * 3] = {0};
    lumen_image x = lumen_image_nchw(xd, LUMEN_F32, 1, 2, 5, 5);
    lumen_image w = lumen_image_nchw(wd, LUMEN_F32, 3, 2, 3, 3);
    v[0].given = v[1].given = 1, v[0].u.image = &x, v[1].u.image = &w;
    const int stride = lumen_op_arg_index(op, "stride");
    v[stride].given = 1, v[stride].u.pair[0] = 2, v[stride].u.pair[1] = 0;
    assert_int_equal(lumen_op_output_shape(op, v, &shape), LUMEN_ERR_INVALID_ARGUMENT);
    assert_non_null(strstr(lumen_last_error(), "stride:"));
    v[stride].u.pair[1] = 1;
    assert_int_equal(lumen_op_output_shape(op, v, &shape), LUMEN_OK);
    assert_true(shape.type == LUMEN_ARG_TENSOR && shape.n == 1 && shape.c == 3);
    assert_true(shape.h == 2 && shape.w == 3);
    v[stride].type = LUMEN_ARG_INT;
    assert_int_equal(lumen_op_check_args(op, v), LUMEN_ERR_INVALID_ARGUMENT);
    assert_non_null(strstr(lumen_last_error(), "stride:"));
}

/* invoke with tagged values equals the typed call. */
static void test_invoke_filter2d(void **state)
{
    (void)state;
    const lumen_op_desc *op = lumen_op_find("filter2d");
    float src[6 * 7], a[6 * 7], b[6 * 7];
    for (int i = 0; i < 6 * 7; i++)
        src[i] = (float)((i * 37) % 11);
    const float k[6] = {1, 2, 3, -1, 0.5f, 4};
    lumen_image s = lumen_image_nhwc(src, LUMEN_F32, 1, 6, 7, 1);
    lumen_image da = lumen_image_nhwc(a, LUMEN_F32, 1, 6, 7, 1);
    lumen_image db = lumen_image_nhwc(b, LUMEN_F32, 1, 6, 7, 1);
    lumen_context *ctx;
    assert_int_equal(lumen_context_create(&ctx), LUMEN_OK);
    lumen_filter_options o = lumen_filter_options_default();
    o.border = LUMEN_BORDER_WRAP, o.convolve = 1;
    assert_int_equal(lumen_filter2d(ctx, &s, &da, k, 3, 2, &o, NULL), LUMEN_OK);
    lumen_value v[16];
    lumen_op_values_init(op, v);
    v[0].given = 1, v[0].u.image = &s;
    v[1].given = 1, v[1].u.array.data = k, v[1].u.array.w = 3, v[1].u.array.h = 2;
    const int border = lumen_op_arg_index(op, "border"), conv = lumen_op_arg_index(op, "convolve");
    v[border].given = 1, v[border].u.i = LUMEN_BORDER_WRAP;
    v[conv].given = 1, v[conv].u.i = 1;
    lumen_out_shape shape;
    assert_int_equal(lumen_op_output_shape(op, v, &shape), LUMEN_OK);
    assert_true(shape.type == LUMEN_ARG_IMAGE && shape.dtype == LUMEN_F32);
    assert_true(shape.n == 1 && shape.c == 1 && shape.h == 6 && shape.w == 7);
    assert_int_equal(lumen_op_invoke(op, ctx, v, &db, NULL), LUMEN_OK);
    assert_memory_equal(a, b, sizeof a);
    v[border].u.i = 99;
    assert_int_equal(lumen_op_invoke(op, ctx, v, &db, NULL), LUMEN_ERR_INVALID_ARGUMENT);
    assert_non_null(strstr(lumen_last_error(), "border:"));
    lumen_context_destroy(ctx);
}

static void test_invoke_conv2d_bias(void **state)
{
    (void)state;
    const lumen_op_desc *op = lumen_op_find("conv");
    float xd[2 * 2 * 4 * 4], wd[3 * 2 * 1 * 1], ya[2 * 3 * 4 * 4], yb[2 * 3 * 4 * 4];
    for (int i = 0; i < 64; i++)
        xd[i] = (float)(i % 7) - 3.0f;
    for (int i = 0; i < 6; i++)
        wd[i] = 0.25f * (float)i;
    const float bias[3] = {1, -2, 0.5f};
    lumen_image x = lumen_image_nchw(xd, LUMEN_F32, 2, 2, 4, 4);
    lumen_image w = lumen_image_nchw(wd, LUMEN_F32, 3, 2, 1, 1);
    lumen_image a = lumen_image_nchw(ya, LUMEN_F32, 2, 3, 4, 4);
    lumen_image b = lumen_image_nchw(yb, LUMEN_F32, 2, 3, 4, 4);
    lumen_context *ctx;
    assert_int_equal(lumen_context_create(&ctx), LUMEN_OK);
    lumen_conv2d_params p = lumen_conv2d_params_default();
    assert_int_equal(lumen_conv2d(ctx, &x, &w, bias, &p, &a, NULL), LUMEN_OK);
    lumen_value v[16];
    lumen_op_values_init(op, v);
    v[0].given = v[1].given = v[2].given = 1;
    v[0].u.image = &x, v[1].u.image = &w;
    v[2].u.array.data = bias, v[2].u.array.w = 2, v[2].u.array.h = 1;
    assert_int_equal(lumen_op_invoke(op, ctx, v, &b, NULL), LUMEN_ERR_INVALID_ARGUMENT);
    assert_non_null(strstr(lumen_last_error(), "bias:"));
    v[2].u.array.w = 3;
    assert_int_equal(lumen_op_invoke(op, ctx, v, &b, NULL), LUMEN_OK);
    assert_memory_equal(ya, yb, sizeof ya);
    lumen_context_destroy(ctx);
}

/* lumen_write_tensor writes a strided view as 4-D C-order .npy; lumen_read_tensor reads it back,
 * and reads lower-dimensional files with leading axes of 1. */
static void test_tensor_files(void **state)
{
    (void)state;
    char dir[] = "/tmp/lumen_desc_XXXXXX", path[64], bad[64];
    assert_non_null(mkdtemp(dir));
    snprintf(path, sizeof path, "%s/t.npy", dir);
    snprintf(bad, sizeof bad, "%s/t.png", dir);
    float data[2 * 3 * 4 * 5];
    for (int i = 0; i < 120; i++)
        data[i] = (float)i - 60.5f;
    /* The same numbers seen through NHWC strides: element (n, c, h, w) at n*60 + h*15 + w*3 + c. */
    lumen_image t = lumen_image_nhwc(data, LUMEN_F32, 2, 4, 5, 3);
    assert_int_equal(lumen_write_tensor(path, &t), LUMEN_OK);
    lumen_image r;
    assert_int_equal(lumen_read_tensor(path, &r), LUMEN_OK);
    assert_true(r.n == 2 && r.c == 3 && r.h == 4 && r.w == 5 && r.dtype == LUMEN_F32);
    const float *rd = r.data;
    for (int n = 0; n < 2; n++)
        for (int c = 0; c < 3; c++)
            for (int h = 0; h < 4; h++)
                for (int w = 0; w < 5; w++)
                    assert_true(rd[((n * 3 + c) * 4 + h) * 5 + w] ==
                                data[n * 60 + h * 15 + w * 3 + c]);
    lumen_image_free(&r);
    /* Refused before anything is written: no file appears. */
    assert_int_equal(lumen_write_tensor(bad, &t), LUMEN_ERR_UNSUPPORTED);
    assert_int_equal(lumen_read_tensor(bad, &r), LUMEN_ERR_UNSUPPORTED);
    assert_int_not_equal(access(bad, F_OK), 0);
    /* A 2-D image file read as a tensor is (1, 1, H, W). */
    lumen_image img = lumen_image_nhwc(data, LUMEN_F32, 1, 6, 20, 1);
    assert_int_equal(lumen_write_image(path, &img), LUMEN_OK);
    assert_int_equal(lumen_read_tensor(path, &r), LUMEN_OK);
    assert_true(r.n == 1 && r.c == 1 && r.h == 6 && r.w == 20);
    assert_memory_equal(r.data, data, sizeof data);
    lumen_image_free(&r);
    unlink(path);
    rmdir(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_table_integrity),    cmocka_unit_test(test_limits),
        cmocka_unit_test(test_check_args),         cmocka_unit_test(test_invoke_filter2d),
        cmocka_unit_test(test_invoke_conv2d_bias), cmocka_unit_test(test_tensor_files),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
