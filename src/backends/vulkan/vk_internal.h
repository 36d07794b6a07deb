/* The Vulkan module's shared declarations (docs/vulkan.md): the loader's entry points, the
 * devices found at load time, and the per-context state. The module never links libvulkan:
 * it dlopens the loader, so it loads (and lists no device) where there is none. */
#ifndef LUMEN_VK_INTERNAL_H
#define LUMEN_VK_INTERNAL_H

#define VK_NO_PROTOTYPES
#include <vulkan/vulkan.h>

#include "internal.h"

/* Entry points taken from vkGetInstanceProcAddr once the instance exists. Members of one
 * struct rather than globals named vkXxx, so no symbol of ours can shadow the loader's. */
#define VK_INSTANCE_FNS(X)                                                                         \
    X(vkDestroyInstance)                                                                           \
    X(vkEnumeratePhysicalDevices)                                                                  \
    X(vkGetPhysicalDeviceProperties)                                                               \
    X(vkGetPhysicalDeviceMemoryProperties)                                                         \
    X(vkGetPhysicalDeviceQueueFamilyProperties)                                                    \
    X(vkCreateDevice)                                                                              \
    X(vkEnumerateDeviceExtensionProperties)                                                        \
    X(vkDestroyDevice)                                                                             \
    X(vkGetDeviceQueue)                                                                            \
    X(vkCreateCommandPool)                                                                         \
    X(vkDestroyCommandPool)                                                                        \
    X(vkAllocateCommandBuffers)                                                                    \
    X(vkResetCommandBuffer)                                                                        \
    X(vkBeginCommandBuffer)                                                                        \
    X(vkEndCommandBuffer)                                                                          \
    X(vkCreateFence)                                                                               \
    X(vkDestroyFence)                                                                              \
    X(vkResetFences)                                                                               \
    X(vkWaitForFences)                                                                             \
    X(vkQueueSubmit)                                                                               \
    X(vkCreateBuffer)                                                                              \
    X(vkDestroyBuffer)                                                                             \
    X(vkGetBufferMemoryRequirements)                                                               \
    X(vkAllocateMemory)                                                                            \
    X(vkFreeMemory)                                                                                \
    X(vkBindBufferMemory)                                                                          \
    X(vkMapMemory)                                                                                 \
    X(vkCreateShaderModule)                                                                        \
    X(vkDestroyShaderModule)                                                                       \
    X(vkCreateDescriptorSetLayout)                                                                 \
    X(vkDestroyDescriptorSetLayout)                                                                \
    X(vkCreatePipelineLayout)                                                                      \
    X(vkDestroyPipelineLayout)                                                                     \
    X(vkCreateComputePipelines)                                                                    \
    X(vkDestroyPipeline)                                                                           \
    X(vkCreateDescriptorPool)                                                                      \
    X(vkDestroyDescriptorPool)                                                                     \
    X(vkAllocateDescriptorSets)                                                                    \
    X(vkUpdateDescriptorSets)                                                                      \
    X(vkCmdBindPipeline)                                                                           \
    X(vkCmdBindDescriptorSets)                                                                     \
    X(vkCmdPushConstants)                                                                          \
    X(vkCmdDispatch)                                                                               \
    X(vkCmdPipelineBarrier)                                                                        \
    X(vkResetDescriptorPool)                                                                       \
    X(vkCreatePipelineCache)                                                                       \
    X(vkDestroyPipelineCache)                                                                      \
    X(vkGetPipelineCacheData)                                                                      \
    X(vkCmdFillBuffer)                                                                             \
    X(vkCmdCopyBuffer)                                                                             \
    X(vkUnmapMemory)

typedef struct vk_fns {
#define VK_FN_MEMBER(f) PFN_##f f;
    VK_INSTANCE_FNS(VK_FN_MEMBER)
#undef VK_FN_MEMBER
} vk_fns;

extern vk_fns vkf;

/* shaders/common.glsl restates lumen_border's and lumen_dtype's values */
_Static_assert(LUMEN_BORDER_REFLECT == 0 && LUMEN_BORDER_CONSTANT == 1 &&
                   LUMEN_BORDER_REPLICATE == 2 && LUMEN_BORDER_REFLECT101 == 3 &&
                   LUMEN_BORDER_WRAP == 4,
               "shaders/common.glsl's BORDER_* constants");
_Static_assert(LUMEN_U8 == 0 && LUMEN_U16 == 1 && LUMEN_F32 == 2 && LUMEN_F16 == 3 &&
                   LUMEN_BF16 == 4,
               "shaders/common.glsl's DT_* constants");
extern const lumen_module_host *vk_host;

/* A device found at load time: what its contexts need to create a VkDevice and buffers. */
typedef struct vk_device {
    VkPhysicalDevice phys;
    char name[128];
    char driver[96];  /* "Mesa 22.3.6 (llvmpipe), Vulkan 1.3.230": lumen info shows it */
    char api[16];     /* "1.3.230" */
    const char *type; /* Vulkan's device type: "discrete GPU" ... "cpu" (lavapipe) */
    lumen_device_kind kind;
    uint64_t memory;       /* bytes of its device-local heaps */
    uint32_t queue_family; /* one with compute */
    uint32_t mem_device;   /* device-local, on the largest device-local heap */
    uint32_t mem_host;     /* host-visible + coherent (cached where offered): staging */
    bool unified;          /* mem_device is host-visible + coherent too (lavapipe, UMA, ReBAR) */
    uint32_t max_groups[3];
    uint32_t max_group_invocations;
    uint32_t max_shared;              /* bytes of shared memory per workgroup */
    uint64_t max_storage_range;       /* bytes one storage-buffer binding may cover */
    uint8_t cache_uuid[VK_UUID_SIZE]; /* pipelineCacheUUID: keys the on-disk pipeline cache */
    uint32_t vendor_id, device_id, driver_version;
    int fp16, bf16; /* shaderFloat16 / bfloat16 support, for lumen_device_info */
} vk_device;

const vk_device *vk_device_at(int i);

/* Where a buffer lives (docs/vulkan.md, "Memory"): VK_MEM_DEVICE for device-resident views
 * and intermediates (device-local; mapped only on unified memory), VK_MEM_HOST for the staging
 * copies of host views and for constants (host-visible, always mapped; shaders read and write
 * it in place, over the bus on a discrete GPU: each byte once, which a copy would move too). */
typedef enum vk_mem_kind { VK_MEM_DEVICE = 0, VK_MEM_HOST = 1 } vk_mem_kind;

/* A buffer. `addr` is its identity for lumen: a device-resident view's data pointer lies in
 * [addr, addr + size) (vk_find). It is the mapped address where the memory is mapped, else an
 * address range reserved (PROT_NONE, no memory behind it) so that buffers never overlap. */
typedef struct vk_buf {
    VkBuffer buf;
    VkDeviceMemory mem;
    char *map; /* NULL: not host-visible (a discrete GPU's VRAM) */
    char *addr;
    size_t size;
    vk_mem_kind kind;
    bool reserved; /* addr is an mmap reservation (munmap it) */
} vk_buf;

/* A pooled scratch buffer: staging copies of host views, taps, intermediates. Kept across
 * calls (no per-call allocation once warm); `busy` while the op that took it runs. */
typedef struct vk_scratch_buf {
    vk_buf b;
    bool busy;
} vk_scratch_buf;

/* A compute pipeline: a shader of the module with its specialisation constants. */
#define VK_MAX_SPEC 12
typedef struct vk_pipeline {
    const uint32_t *code; /* the shader's SPIR-V (identity of the shader) */
    int32_t spec[VK_MAX_SPEC];
    int n_spec;
    VkPipeline pipe;
} vk_pipeline;

#define VK_MAX_BINDINGS 4 /* storage buffers 0..3 of every shader */
#define VK_PUSH_BYTES 128 /* Vulkan's guaranteed minimum of push-constant bytes */
#define VK_SETS_PER_SUBMIT 256

typedef struct vk_state {
    int dev;
    VkDevice device;
    VkQueue queue;
    VkCommandPool pool;
    VkCommandBuffer cmd;
    VkFence fence;
    VkDescriptorSetLayout set_layout;
    VkPipelineLayout layout;
    VkDescriptorPool desc_pool;
    VkPipelineCache cache; /* loaded from / saved to lumen's cache folder */
    bool cache_dirty;      /* a pipeline was compiled since the cache was loaded */
    vk_pipeline *pipes;    /* compiled on first use: compiling costs (LLVM on lavapipe) */
    int n_pipes, cap_pipes;
    int pipes_compiled; /* this context's pipelines not found in the cache */
    int pipes_cached;   /* ... and those the driver says came from the cache */
    bool feedback;      /* VK_EXT_pipeline_creation_feedback enabled: cache hits are known */
    /* the command buffer being recorded (vk_rec_*) */
    bool recording;
    int sets_used, dispatches;
    vk_buf *allocs; /* lumen_device_alloc's buffers */
    int n_allocs, cap_allocs;
    vk_scratch_buf *scratch;
    int n_scratch, cap_scratch;
    uint64_t used; /* bytes of buffers alive, for the context's memory limit */
    /* bytes one binding may cover: the device's maxStorageBufferRange, or less where
     * $LUMEN_VULKAN_MAX_BINDING says so when the context is made (tests reach the pieces of
     * vk_pieces.c with small images that way) */
    uint64_t max_range;
} vk_state;

/* A buffer of at least `bytes` of the kind, counted against the memory limit;
 * LUMEN_ERR_OUT_OF_MEMORY (no message kept by the caller when it falls back) when it cannot be
 * had. `addressed`: it needs an address even when not mapped (lumen_device_alloc's). */
lumen_status vk_buf_create(lumen_context *ctx, vk_state *st, size_t bytes, vk_mem_kind kind,
                           bool addressed, vk_buf *out);
void vk_buf_destroy(vk_state *st, vk_buf *b);
/* The device buffer holding [p, p + bytes), or NULL. */
const vk_buf *vk_find(const vk_state *st, const void *p, size_t bytes);
/* A VkResult as a lumen status with a message. */
lumen_status vk_fail(VkResult r, const char *what);
/* Room for one more item in a growing table (*items of *cap items of `size` bytes, n used):
 * doubles it from 16; LUMEN_ERR_OUT_OF_MEMORY naming `what` when it cannot. */
lumen_status vk_grow(void *items, int n, int *cap, size_t size, const char *what);
/* What run() reports: the method, isa "vulkan", the shader path. */
static inline void vk_ran(lumen_run_info *info, lumen_method method, const char *algo)
{
    info->method = method;
    info->isa = "vulkan";
    info->algo = algo;
}

/* ---- scratch pool (vk_scratch.c) -------------------------------------------------------- */

/* A pooled buffer of at least `bytes` for the running op; returned by vk_scratch_release_all
 * once its submission has finished. */
lumen_status vk_scratch(lumen_context *ctx, vk_state *st, size_t bytes, vk_mem_kind kind,
                        vk_buf **out);
void vk_scratch_release_all(vk_state *st);
/* Frees the pooled buffers not in use (memory limit reached, context destroyed). */
void vk_scratch_trim(vk_state *st);

/* ---- views (vk_view.c) ------------------------------------------------------------------ */

/* A view as a shader addresses it: a whole buffer, the element offset of the data pointer
 * and the strides in elements (std430 layout, as shaders/common.glsl's View). */
typedef struct vk_pview {
    int32_t off, sn, sc, sh, sw;
} vk_pview;

typedef struct vk_view {
    VkBuffer buf;
    vk_pview pv;
    const lumen_image *img;
    vk_buf *tmp;      /* host views: the pooled staging copy */
    char *host_first; /* host views: the first byte the view touches */
    size_t bytes;
    bool compact; /* staged as its elements alone (NCHW), not as its byte range */
} vk_view;

/* Whether the module can bind v, whole or in pieces: strides in 32-bit ints, and a
 * device-resident view inside one of this context's buffers, aligned (vk_view_fits_range:
 * whether its staging copy fits one binding too). */
bool vk_view_fits(lumen_context *ctx, const lumen_image *v);
/* Binds v for a shader: device views in place, host views through a staging copy: of their
 * byte range (outputs too, so that the bytes between a window's rows are copied back as they
 * were), or of their elements alone where the range is mostly other data or too large for a
 * binding (one channel of an interleaved image: the pieces of vk_pieces.c). */
lumen_status vk_view_bind(lumen_context *ctx, vk_state *st, const lumen_image *v, bool is_output,
                          vk_view *out);
/* After the submission: copies a host output's staging copy back. */
void vk_view_finish(const vk_view *v);
/* Copies n floats into a scratch buffer (taps, weights). */
lumen_status vk_upload_floats(lumen_context *ctx, vk_state *st, const float *p, size_t n,
                              VkBuffer *out);

/* ---- recording and pipelines (vk_record.c) ---------------------------------------------- */

/* A shader and its specialisation constants (ids 0 .. n_spec-1, 32-bit ints). */
typedef struct vk_kernel {
    const uint32_t *code;
    size_t code_bytes;
    int32_t spec[VK_MAX_SPEC];
    int n_spec;
} vk_kernel;
#define VK_KERNEL(spv, ...)                                                                        \
    ((vk_kernel){.code = spv,                                                                      \
                 .code_bytes = sizeof spv,                                                         \
                 .spec = {__VA_ARGS__},                                                            \
                 .n_spec = (int)(sizeof((int32_t[]){__VA_ARGS__}) / sizeof(int32_t))})

/* One op = one command buffer = one submission: begin, dispatches (each after a barrier on the
 * previous one's writes), submit and wait. A recording that runs out of descriptor sets is
 * submitted and continued transparently. */
lumen_status vk_rec_begin(vk_state *st);
lumen_status vk_rec_dispatch(vk_state *st, const vk_kernel *k, const VkBuffer *bufs, int n_bufs,
                             const void *push, uint32_t push_bytes, uint32_t gx, uint32_t gy,
                             uint32_t gz);
lumen_status vk_rec_submit(vk_state *st);
/* An op of one dispatch: begin, dispatch, submit and wait. */
lumen_status vk_rec_one(vk_state *st, const vk_kernel *k, const VkBuffer *bufs, int n_bufs,
                        const void *push, uint32_t push_bytes, uint32_t gx, uint32_t gy,
                        uint32_t gz);
/* Records a fill of [offset, offset + bytes) of b with a 32-bit value, visible to the next
 * dispatch (device memory the host cannot write: counters, flags). */
void vk_rec_fill(vk_state *st, VkBuffer b, size_t offset, size_t bytes, uint32_t value);
/* Copies between a device buffer and host memory through a staging buffer (one submission
 * per staging-sized chunk): upload and download of unmapped memory. */
lumen_status vk_copy_through_staging(lumen_context *ctx, vk_state *st, const vk_buf *b,
                                     size_t offset, void *host, size_t bytes, bool to_device);
/* Loads the on-disk pipeline cache into st->cache; saves it when pipelines were compiled. */
void vk_pipeline_cache_load(vk_state *st);
void vk_pipeline_cache_save(vk_state *st);
void vk_pipelines_destroy(vk_state *st);

/* ---- ops: one file each ----------------------------------------------------------------- */

typedef struct vk_op_impl {
    bool (*supports)(lumen_context *ctx, const lumen_op *op);
    lumen_status (*run)(lumen_context *ctx, const lumen_op *op, lumen_run_info *info);
    /* run() splits host views larger than one binding itself (vk_pieces.c); otherwise
     * module.c refuses them, and the CPU runs the op */
    bool pieces;
} vk_op_impl;

extern const vk_op_impl vk_op_direct, vk_op_separable, vk_op_fft, vk_op_gauss_fast, vk_op_conv2d,
    vk_op_conv_transpose2d, vk_op_resize;

/* ---- filters on images larger than a binding (vk_pieces.c) ----------------------------- */

/* Whether a filter job fits the device as one submission (views, intermediates). */
typedef bool (*vk_piece_fits)(lumen_context *ctx, const lumen_filter_job *j);
typedef lumen_status (*vk_piece_run)(lumen_context *ctx, const lumen_filter_job *j,
                                     lumen_run_info *info);
/* Whether j fits as a whole or in pieces (images, planes, row bands). */
bool vk_filter_fits_in_pieces(lumen_context *ctx, const lumen_filter_job *j, vk_piece_fits fits);
/* Runs j whole when it fits, else piece by piece (one submission each). */
lumen_status vk_filter_in_pieces(lumen_context *ctx, const lumen_filter_job *j, vk_piece_fits fits,
                                 vk_piece_run run, lumen_run_info *info);
/* The same for any op whose views share n and c (the fast Gaussian): pieces of one image's
 * channels, or of one plane. */
typedef bool (*vk_op_fits)(lumen_context *ctx, const lumen_op *op);
typedef lumen_status (*vk_op_run)(lumen_context *ctx, const lumen_op *op, lumen_run_info *info);
bool vk_op_fits_in_planes(lumen_context *ctx, const lumen_op *op, vk_op_fits fits);
lumen_status vk_op_in_planes(lumen_context *ctx, const lumen_op *op, vk_op_fits fits, vk_op_run run,
                             lumen_run_info *info);
/* Whether a view's staging copy (host) or binding (device) fits one storage buffer. */
bool vk_view_fits_range(lumen_context *ctx, const lumen_image *v);

/* Estimated seconds of a filter op on the context's device (cost.c); < 0: not estimable. */
double vk_cost(lumen_context *ctx, const lumen_op *op);

/* Whether a grid fits the device's workgroup counts. */
bool vk_grid_fits(const vk_state *st, uint64_t gx, uint64_t gy, uint64_t gz);
static inline uint32_t vk_groups(int64_t n, int per)
{
    return (uint32_t)((n + per - 1) / per);
}

#endif
