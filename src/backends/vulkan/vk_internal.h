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
    X(vkCmdPipelineBarrier)

typedef struct vk_fns {
#define VK_FN_MEMBER(f) PFN_##f f;
    VK_INSTANCE_FNS(VK_FN_MEMBER)
#undef VK_FN_MEMBER
} vk_fns;

extern vk_fns vkf;
extern const lumen_module_host *vk_host;

/* A device found at load time: what its contexts need to create a VkDevice and buffers. */
typedef struct vk_device {
    VkPhysicalDevice phys;
    char name[128];
    lumen_device_kind kind;
    uint64_t memory;       /* bytes of its device-local heaps */
    uint32_t queue_family; /* one with compute */
    uint32_t mem_type;     /* host-visible + coherent (device-local too where offered) */
    uint32_t max_groups[3];
    uint64_t max_storage_range; /* bytes one storage-buffer binding may cover */
} vk_device;

const vk_device *vk_device_at(int i);

/* A buffer of host-visible memory, mapped for its whole life: a device-resident view's data
 * pointer is its mapped address, so upload and download are memcpy and a view is found back
 * from its pointer (vk_find). */
typedef struct vk_buf {
    VkBuffer buf;
    VkDeviceMemory mem;
    char *map;
    size_t size;
} vk_buf;

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
    VkDescriptorSet set;
    VkPipeline direct; /* created on first use: compiling it costs (LLVM on lavapipe) */
    vk_buf *allocs;    /* lumen_device_alloc's buffers */
    int n_allocs, cap_allocs;
    uint64_t used; /* bytes of buffers alive, for the context's memory limit */
} vk_state;

/* A buffer of at least `bytes`, counted against the memory limit; LUMEN_ERR_OUT_OF_MEMORY (no
 * message kept by the caller when it falls back) when it cannot be had. */
lumen_status vk_buf_create(lumen_context *ctx, vk_state *st, size_t bytes, vk_buf *out);
void vk_buf_destroy(vk_state *st, vk_buf *b);
/* The device buffer holding [p, p + bytes), or NULL. */
const vk_buf *vk_find(const vk_state *st, const void *p, size_t bytes);
/* A VkResult as a lumen status with a message. */
lumen_status vk_fail(VkResult r, const char *what);

bool vk_direct_supports(lumen_context *ctx, const lumen_op *op);
lumen_status vk_direct_run(lumen_context *ctx, const lumen_op *op, lumen_run_info *info);
void vk_direct_destroy(vk_state *st);

#endif
