/*
 * The Vulkan module: lumen_module_init, the backend table, devices, per-context state and
 * device memory (docs/vulkan.md).
 *
 * liblumen_vulkan.so links neither the core nor libvulkan: the core's services come in the
 * host table, and the loader is dlopened on first use, so on a machine without a loader, an
 * ICD or a device the module loads and lists nothing (one debug line says why). The instance
 * is headless (no surface extensions) and lives as long as the process.
 */
#define _GNU_SOURCE
#include "vk_internal.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#define VK_MAX_DEVICES 16

const lumen_module_host *vk_host;
vk_fns vkf;

static pthread_once_t probe_once = PTHREAD_ONCE_INIT;
static void *loader;
static VkInstance instance;
/* Vulkan 1.1 entry points, NULL on a 1.0 loader: only the driver description uses them */
static PFN_vkGetPhysicalDeviceProperties2 get_props2;
static PFN_vkGetPhysicalDeviceFeatures2 get_features2;
static vk_device devices[VK_MAX_DEVICES];
static int n_devices;

lumen_status vk_fail(VkResult r, const char *what)
{
    const bool oom = r == VK_ERROR_OUT_OF_HOST_MEMORY || r == VK_ERROR_OUT_OF_DEVICE_MEMORY;
    return vk_host->set_error(oom ? LUMEN_ERR_OUT_OF_MEMORY : LUMEN_ERR_INTERNAL,
                              "vulkan: %s failed (VkResult %d)", what, (int)r);
}

lumen_status vk_grow(void *items, int n, int *cap, size_t size, const char *what)
{
    void **p = items;
    if (n < *cap) return LUMEN_OK;
    const int c = *cap ? 2 * *cap : 16;
    void *a = realloc(*p, (size_t)c * size);
    if (!a) return vk_host->set_error(LUMEN_ERR_OUT_OF_MEMORY, "vulkan: %s", what);
    *p = a, *cap = c;
    return LUMEN_OK;
}

const vk_device *vk_device_at(int i)
{
    return i >= 0 && i < n_devices ? &devices[i] : NULL;
}

/* ---- devices --------------------------------------------------------------------------- */

static void *open_loader(void)
{
    /* libvulkan.so.1 on Linux; the Vulkan SDK's loader (in front of MoltenVK) on macOS */
    static const char *const names[] = {"libvulkan.so.1", "libvulkan.so", "libvulkan.1.dylib",
                                        "libvulkan.dylib"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        void *h = dlopen(names[i], RTLD_NOW | RTLD_LOCAL);
        if (h) return h;
    }
    return NULL;
}

/* Whether the loader offers instance extension `name`. */
static bool has_instance_extension(PFN_vkGetInstanceProcAddr gipa, const char *name)
{
    PFN_vkEnumerateInstanceExtensionProperties enumerate =
        (PFN_vkEnumerateInstanceExtensionProperties)gipa(NULL,
                                                         "vkEnumerateInstanceExtensionProperties");
    uint32_t n = 0;
    if (!enumerate || enumerate(NULL, &n, NULL) != VK_SUCCESS || n == 0) return false;
    VkExtensionProperties *ext = calloc(n, sizeof *ext);
    bool found = false;
    if (ext && enumerate(NULL, &n, ext) == VK_SUCCESS)
        for (uint32_t i = 0; i < n && !found; i++)
            found = !strcmp(ext[i].extensionName, name);
    free(ext);
    return found;
}

static bool load_instance_fns(PFN_vkGetInstanceProcAddr gipa)
{
    bool ok = true;
#define VK_LOAD(f)                                                                                 \
    vkf.f = (PFN_##f)gipa(instance, #f);                                                           \
    ok = ok && vkf.f;
    VK_INSTANCE_FNS(VK_LOAD)
#undef VK_LOAD
    return ok;
}

/* Whether device extension `name` is offered. */
static bool has_device_extension(VkPhysicalDevice phys, const char *name)
{
    uint32_t n = 0;
    bool found = false;
    if (vkf.vkEnumerateDeviceExtensionProperties(phys, NULL, &n, NULL) != VK_SUCCESS || !n)
        return false;
    VkExtensionProperties *ext = calloc(n, sizeof *ext);
    if (ext && vkf.vkEnumerateDeviceExtensionProperties(phys, NULL, &n, ext) == VK_SUCCESS)
        for (uint32_t i = 0; i < n && !found; i++)
            found = !strcmp(ext[i].extensionName, name);
    free(ext);
    return found;
}

/* The driver's name and version (VkPhysicalDeviceDriverProperties, Vulkan 1.2), and fp16 and
 * bf16 shader arithmetic, where the instance has vkGetPhysicalDeviceProperties2 (1.1). */
static void describe_driver(VkPhysicalDevice phys, uint32_t api, vk_device *d)
{
    snprintf(d->driver, sizeof d->driver, "driver version 0x%08x", d->driver_version);
    if (!get_props2 || !get_features2 || VK_VERSION_MINOR(api) < 2) return;
    VkPhysicalDeviceDriverProperties drv = {
        .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_DRIVER_PROPERTIES};
    VkPhysicalDeviceProperties2 p2 = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2,
                                      .pNext = &drv};
    get_props2(phys, &p2);
    snprintf(d->driver, sizeof d->driver, "%.40s %.50s", drv.driverName, drv.driverInfo);
    VkPhysicalDeviceShaderFloat16Int8Features f16 = {
        .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_FLOAT16_INT8_FEATURES};
    VkPhysicalDeviceFeatures2 f2 = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2,
                                    .pNext = &f16};
    get_features2(phys, &f2);
    d->fp16 = f16.shaderFloat16 != 0;
    d->bf16 = has_device_extension(phys, "VK_KHR_shader_bfloat16");
}

/* The memory types of buffers (docs/vulkan.md, "Memory"): device buffers in a device-local
 * type of the largest device-local heap (the VRAM, not a 256 MiB BAR window), host-visible
 * staging in a coherent type (cached where offered: downloads read it). Device memory is
 * "unified" when that type is host-visible and coherent too (lavapipe, integrated GPUs,
 * ReBAR): then device buffers are mapped and nothing is ever copied.
 * $LUMEN_VULKAN_MEMORY=staged treats every device as discrete (tests reach the staging paths
 * on lavapipe that way). */
static bool choose_memory(const VkPhysicalDeviceMemoryProperties *mem, vk_device *d)
{
    const VkMemoryPropertyFlags local = VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT,
                                host = VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT |
                                       VK_MEMORY_PROPERTY_HOST_COHERENT_BIT;
    int dev = -1, stage = -1;
    for (uint32_t t = 0; t < mem->memoryTypeCount; t++) {
        const VkMemoryPropertyFlags f = mem->memoryTypes[t].propertyFlags;
        const VkDeviceSize heap = mem->memoryHeaps[mem->memoryTypes[t].heapIndex].size;
        if ((f & local) &&
            (dev < 0 || heap > mem->memoryHeaps[mem->memoryTypes[dev].heapIndex].size ||
             (heap == mem->memoryHeaps[mem->memoryTypes[dev].heapIndex].size &&
              (f & host) == host && (mem->memoryTypes[dev].propertyFlags & host) != host)))
            dev = (int)t;
        if ((f & host) == host && (stage < 0 || ((f & VK_MEMORY_PROPERTY_HOST_CACHED_BIT) &&
                                                 !(mem->memoryTypes[stage].propertyFlags &
                                                   VK_MEMORY_PROPERTY_HOST_CACHED_BIT))))
            stage = (int)t;
    }
    if (stage < 0) return false; /* no way to reach the host */
    if (dev < 0) dev = stage;    /* no device-local memory: all of it is the host's */
    d->mem_device = (uint32_t)dev, d->mem_host = (uint32_t)stage;
    const char *mode = getenv("LUMEN_VULKAN_MEMORY");
    d->unified =
        (mem->memoryTypes[dev].propertyFlags & host) == host && !(mode && !strcmp(mode, "staged"));
    if (d->memory == 0) d->memory = mem->memoryHeaps[mem->memoryTypes[dev].heapIndex].size;
    return true;
}

/* Fills devices[i] from a physical device; false when it has no compute queue or no
 * host-visible coherent memory (this first step needs both). */
static bool describe(VkPhysicalDevice phys, vk_device *d)
{
    VkPhysicalDeviceProperties props;
    VkPhysicalDeviceMemoryProperties mem;
    vkf.vkGetPhysicalDeviceProperties(phys, &props);
    vkf.vkGetPhysicalDeviceMemoryProperties(phys, &mem);
    memset(d, 0, sizeof *d);
    d->phys = phys;
    /* names longer than lumen's 127 characters are cut */
    memcpy(d->name, props.deviceName, sizeof d->name - 1);
    d->name[sizeof d->name - 1] = '\0';
    static const char *const types[] = {"other", "integrated GPU", "discrete GPU", "virtual GPU",
                                        "cpu"};
    d->type = (unsigned)props.deviceType < 5 ? types[props.deviceType] : "other";
    switch (props.deviceType) {
    case VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU: d->kind = LUMEN_DEVICE_DISCRETE_GPU; break;
    case VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU: d->kind = LUMEN_DEVICE_INTEGRATED_GPU; break;
    /* lavapipe and other CPU implementations: software, so "auto" never picks them over the
     * CPU backend, which is faster on the same cores */
    default: d->kind = LUMEN_DEVICE_SOFTWARE; break;
    }
    for (uint32_t h = 0; h < mem.memoryHeapCount; h++)
        if (mem.memoryHeaps[h].flags & VK_MEMORY_HEAP_DEVICE_LOCAL_BIT)
            d->memory += mem.memoryHeaps[h].size;
    for (int k = 0; k < 3; k++)
        d->max_groups[k] = props.limits.maxComputeWorkGroupCount[k];
    d->max_group_invocations = props.limits.maxComputeWorkGroupInvocations;
    d->max_shared = props.limits.maxComputeSharedMemorySize;
    d->max_storage_range = props.limits.maxStorageBufferRange;
    memcpy(d->cache_uuid, props.pipelineCacheUUID, VK_UUID_SIZE);
    d->vendor_id = props.vendorID, d->device_id = props.deviceID;
    d->driver_version = props.driverVersion;
    snprintf(d->api, sizeof d->api, "%u.%u.%u", VK_VERSION_MAJOR(props.apiVersion),
             VK_VERSION_MINOR(props.apiVersion), VK_VERSION_PATCH(props.apiVersion));
    describe_driver(phys, props.apiVersion, d);

    uint32_t nq = 0;
    vkf.vkGetPhysicalDeviceQueueFamilyProperties(phys, &nq, NULL);
    VkQueueFamilyProperties q[32];
    if (nq > 32) nq = 32;
    vkf.vkGetPhysicalDeviceQueueFamilyProperties(phys, &nq, q);
    bool have_queue = false;
    for (uint32_t i = 0; i < nq && !have_queue; i++)
        if (q[i].queueFlags & VK_QUEUE_COMPUTE_BIT) d->queue_family = i, have_queue = true;

    return have_queue && choose_memory(&mem, d);
}

static void probe(void)
{
    if (!(loader = open_loader())) {
        vk_host->log(LUMEN_LOG_DEBUG, "vulkan: no loader (libvulkan.so.1): no devices");
        return;
    }
    PFN_vkGetInstanceProcAddr gipa =
        (PFN_vkGetInstanceProcAddr)(uintptr_t)dlsym(loader, "vkGetInstanceProcAddr");
    PFN_vkCreateInstance create =
        gipa ? (PFN_vkCreateInstance)gipa(NULL, "vkCreateInstance") : NULL;
    if (!create) {
        vk_host->log(LUMEN_LOG_DEBUG, "vulkan: the loader has no vkCreateInstance: no devices");
        return;
    }
    const char *ext[2];
    uint32_t n_ext = 0;
    VkInstanceCreateInfo ci = {.sType = VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO};
    VkApplicationInfo app = {.sType = VK_STRUCTURE_TYPE_APPLICATION_INFO,
                             .pApplicationName = "lumen",
                             .pEngineName = "lumen",
                             .apiVersion = VK_API_VERSION_1_0};
    /* 1.1 where the loader has it (vkGetPhysicalDeviceProperties2 for the driver's name) */
    PFN_vkEnumerateInstanceVersion version =
        (PFN_vkEnumerateInstanceVersion)gipa(NULL, "vkEnumerateInstanceVersion");
    uint32_t loader_api = VK_API_VERSION_1_0;
    if (version && version(&loader_api) == VK_SUCCESS && loader_api >= VK_API_VERSION_1_1)
        app.apiVersion = VK_API_VERSION_1_1;
    ci.pApplicationInfo = &app;
    /* Portability enumeration: MoltenVK's devices are listed only when the instance asks for
     * them with this extension and flag; loaders without the extension do not know the flag
     * either. Its devices' portability subset needs properties2 on a 1.0 instance. */
    if (has_instance_extension(gipa, "VK_KHR_portability_enumeration")) {
        ext[n_ext++] = "VK_KHR_portability_enumeration";
        ci.flags = 0x00000001; /* VK_INSTANCE_CREATE_ENUMERATE_PORTABILITY_BIT_KHR */
        if (has_instance_extension(gipa, "VK_KHR_get_physical_device_properties2"))
            ext[n_ext++] = "VK_KHR_get_physical_device_properties2";
    }
    ci.enabledExtensionCount = n_ext;
    ci.ppEnabledExtensionNames = n_ext ? ext : NULL;
    VkResult r = create(&ci, NULL, &instance);
    if (r != VK_SUCCESS) {
        vk_host->log(LUMEN_LOG_DEBUG, "vulkan: vkCreateInstance: VkResult %d: no devices", (int)r);
        instance = VK_NULL_HANDLE;
        return;
    }
    if (!load_instance_fns(gipa)) {
        vk_host->log(LUMEN_LOG_WARN, "vulkan: the loader lacks Vulkan 1.0 entry points");
        return;
    }
    if (app.apiVersion >= VK_API_VERSION_1_1) {
        get_props2 =
            (PFN_vkGetPhysicalDeviceProperties2)gipa(instance, "vkGetPhysicalDeviceProperties2");
        get_features2 =
            (PFN_vkGetPhysicalDeviceFeatures2)gipa(instance, "vkGetPhysicalDeviceFeatures2");
    }
    VkPhysicalDevice phys[VK_MAX_DEVICES];
    uint32_t n = VK_MAX_DEVICES;
    r = vkf.vkEnumeratePhysicalDevices(instance, &n, phys);
    if (r != VK_SUCCESS && r != VK_INCOMPLETE) n = 0;
    for (uint32_t i = 0; i < n; i++)
        if (describe(phys[i], &devices[n_devices])) n_devices++;
    vk_host->log(LUMEN_LOG_DEBUG, "vulkan: %d device(s)", n_devices);
}

static int vk_count(void)
{
    pthread_once(&probe_once, probe);
    return n_devices;
}

static lumen_status vk_info(int i, lumen_device_info *info)
{
    const vk_device *d = vk_device_at(i);
    if (!d) return vk_host->set_error(LUMEN_ERR_INVALID_ARGUMENT, "vulkan: no device %d", i);
    memset(info, 0, sizeof *info);
    snprintf(info->name, sizeof info->name, "%s", d->name);
    strcpy(info->backend, "vulkan");
    info->kind = d->kind;
    /* Vulkan 1.0 reports no free memory (VK_EXT_memory_budget would): the total stands in */
    info->memory_total = info->memory_free = d->memory;
    info->fp16 = d->fp16;
    info->bf16 = d->bf16;
    return LUMEN_OK;
}

static void vk_driver(int i, char *buf, size_t size)
{
    const vk_device *d = vk_device_at(i);
    if (d)
        snprintf(buf, size, "Vulkan %s, %s, device type %s, %s memory", d->api, d->driver, d->type,
                 d->unified ? "unified" : "staged");
    else if (size)
        buf[0] = '\0';
}

/* ---- per-context state ----------------------------------------------------------------- */

static void vk_state_destroy(void *p)
{
    vk_state *st = p;
    if (!st) return;
    if (st->device) {
        for (int i = 0; i < st->n_allocs; i++)
            vk_buf_destroy(st, &st->allocs[i]);
        vk_scratch_release_all(st);
        vk_scratch_trim(st);
        vk_pipeline_cache_save(st);
        vk_pipelines_destroy(st);
        if (st->cache) vkf.vkDestroyPipelineCache(st->device, st->cache, NULL);
        if (st->desc_pool) vkf.vkDestroyDescriptorPool(st->device, st->desc_pool, NULL);
        if (st->layout) vkf.vkDestroyPipelineLayout(st->device, st->layout, NULL);
        if (st->set_layout) vkf.vkDestroyDescriptorSetLayout(st->device, st->set_layout, NULL);
        if (st->fence) vkf.vkDestroyFence(st->device, st->fence, NULL);
        if (st->pool) vkf.vkDestroyCommandPool(st->device, st->pool, NULL);
        vkf.vkDestroyDevice(st->device, NULL);
    }
    free(st->allocs);
    free(st->scratch);
    free(st);
}

/* One VkDevice per context, with its own queue: contexts never share a queue, so nothing
 * needs a lock (a queue is externally synchronised). */
static lumen_status state_init(vk_state *st, const vk_device *d)
{
    const float prio = 1.0f;
    VkDeviceQueueCreateInfo q = {.sType = VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO,
                                 .queueFamilyIndex = d->queue_family,
                                 .queueCount = 1,
                                 .pQueuePriorities = &prio};
    /* A device that lists VK_KHR_portability_subset (MoltenVK) must have it enabled; pipeline
     * creation feedback, where offered, tells whether a pipeline came from the cache. */
    const char *ext[2];
    uint32_t n_ext = 0;
    if (has_device_extension(d->phys, "VK_KHR_portability_subset"))
        ext[n_ext++] = "VK_KHR_portability_subset";
    if (has_device_extension(d->phys, "VK_EXT_pipeline_creation_feedback")) {
        ext[n_ext++] = "VK_EXT_pipeline_creation_feedback";
        st->feedback = true;
    }
    VkDeviceCreateInfo dci = {.sType = VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO,
                              .queueCreateInfoCount = 1,
                              .pQueueCreateInfos = &q,
                              .enabledExtensionCount = n_ext,
                              .ppEnabledExtensionNames = n_ext ? ext : NULL};
    VkResult r = vkf.vkCreateDevice(d->phys, &dci, NULL, &st->device);
    if (r != VK_SUCCESS) {
        st->device = VK_NULL_HANDLE;
        return vk_fail(r, "vkCreateDevice");
    }
    vkf.vkGetDeviceQueue(st->device, d->queue_family, 0, &st->queue);
    VkCommandPoolCreateInfo pci = {.sType = VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO,
                                   .flags = VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT,
                                   .queueFamilyIndex = d->queue_family};
    if ((r = vkf.vkCreateCommandPool(st->device, &pci, NULL, &st->pool)))
        return vk_fail(r, "vkCreateCommandPool");
    VkCommandBufferAllocateInfo cai = {.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO,
                                       .commandPool = st->pool,
                                       .level = VK_COMMAND_BUFFER_LEVEL_PRIMARY,
                                       .commandBufferCount = 1};
    if ((r = vkf.vkAllocateCommandBuffers(st->device, &cai, &st->cmd)))
        return vk_fail(r, "vkAllocateCommandBuffers");
    VkFenceCreateInfo fci = {.sType = VK_STRUCTURE_TYPE_FENCE_CREATE_INFO};
    if ((r = vkf.vkCreateFence(st->device, &fci, NULL, &st->fence)))
        return vk_fail(r, "vkCreateFence");

    /* Every shader binds up to VK_MAX_BINDINGS storage buffers (views, taps, intermediates)
     * and takes its sizes as push constants: one set layout and one pipeline layout serve
     * them all. */
    VkDescriptorSetLayoutBinding b[VK_MAX_BINDINGS];
    for (uint32_t i = 0; i < VK_MAX_BINDINGS; i++)
        b[i] = (VkDescriptorSetLayoutBinding){.binding = i,
                                              .descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER,
                                              .descriptorCount = 1,
                                              .stageFlags = VK_SHADER_STAGE_COMPUTE_BIT};
    VkDescriptorSetLayoutCreateInfo sli = {.sType =
                                               VK_STRUCTURE_TYPE_DESCRIPTOR_SET_LAYOUT_CREATE_INFO,
                                           .bindingCount = VK_MAX_BINDINGS,
                                           .pBindings = b};
    if ((r = vkf.vkCreateDescriptorSetLayout(st->device, &sli, NULL, &st->set_layout)))
        return vk_fail(r, "vkCreateDescriptorSetLayout");
    VkPushConstantRange range = {
        .stageFlags = VK_SHADER_STAGE_COMPUTE_BIT, .offset = 0, .size = VK_PUSH_BYTES};
    VkPipelineLayoutCreateInfo pli = {.sType = VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO,
                                      .setLayoutCount = 1,
                                      .pSetLayouts = &st->set_layout,
                                      .pushConstantRangeCount = 1,
                                      .pPushConstantRanges = &range};
    if ((r = vkf.vkCreatePipelineLayout(st->device, &pli, NULL, &st->layout)))
        return vk_fail(r, "vkCreatePipelineLayout");
    /* one set per dispatch of a submission (vk_record.c), reset per submission */
    VkDescriptorPoolSize ps = {.type = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER,
                               .descriptorCount = VK_SETS_PER_SUBMIT * VK_MAX_BINDINGS};
    VkDescriptorPoolCreateInfo dpi = {.sType = VK_STRUCTURE_TYPE_DESCRIPTOR_POOL_CREATE_INFO,
                                      .maxSets = VK_SETS_PER_SUBMIT,
                                      .poolSizeCount = 1,
                                      .pPoolSizes = &ps};
    if ((r = vkf.vkCreateDescriptorPool(st->device, &dpi, NULL, &st->desc_pool)))
        return vk_fail(r, "vkCreateDescriptorPool");
    vk_pipeline_cache_load(st);
    return LUMEN_OK;
}

static lumen_status vk_state_create(int device, void **out)
{
    const vk_device *d = vk_device_at(device);
    if (!d) return vk_host->set_error(LUMEN_ERR_INVALID_ARGUMENT, "vulkan: no device %d", device);
    vk_state *st = calloc(1, sizeof *st);
    if (!st) return vk_host->set_error(LUMEN_ERR_OUT_OF_MEMORY, "vulkan: context state");
    st->dev = device;
    st->max_range = d->max_storage_range;
    const char *cap = getenv("LUMEN_VULKAN_MAX_BINDING");
    if (cap && strtoull(cap, NULL, 10) >= 4096 && strtoull(cap, NULL, 10) < st->max_range)
        st->max_range = strtoull(cap, NULL, 10);
    lumen_status s = state_init(st, d);
    if (s) {
        vk_state_destroy(st);
        return s;
    }
    *out = st;
    return LUMEN_OK;
}

/* ---- memory ---------------------------------------------------------------------------- */

/* An address range with no memory behind it, the identity of an unmapped buffer. */
static char *reserve(size_t size)
{
    void *p = mmap(NULL, size, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    return p == MAP_FAILED ? NULL : p;
}

lumen_status vk_buf_create(lumen_context *ctx, vk_state *st, size_t bytes, vk_mem_kind kind,
                           bool addressed, vk_buf *out)
{
    const vk_device *d = vk_device_at(st->dev);
    size_t size = bytes < 4 ? 4 : (bytes + 3) / 4 * 4; /* storage buffers hold whole words */
    uint64_t limit = vk_host->memory_limit(ctx);
    if (limit && st->used + size > limit)
        return vk_host->set_error(LUMEN_ERR_OUT_OF_MEMORY,
                                  "vulkan: %zu bytes would pass the memory limit of %llu", size,
                                  (unsigned long long)limit);
    if (size > st->max_range)
        return vk_host->set_error(LUMEN_ERR_OUT_OF_MEMORY,
                                  "vulkan: %zu bytes pass the device's storage-buffer range", size);
    memset(out, 0, sizeof *out);
    out->kind = kind;
    const uint32_t type = kind == VK_MEM_HOST ? d->mem_host : d->mem_device;
    const bool mapped = kind == VK_MEM_HOST || d->unified;
    VkBufferCreateInfo bci = {.sType = VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO,
                              .size = size,
                              .usage = VK_BUFFER_USAGE_STORAGE_BUFFER_BIT |
                                       VK_BUFFER_USAGE_TRANSFER_SRC_BIT |
                                       VK_BUFFER_USAGE_TRANSFER_DST_BIT,
                              .sharingMode = VK_SHARING_MODE_EXCLUSIVE};
    VkResult r = vkf.vkCreateBuffer(st->device, &bci, NULL, &out->buf);
    if (r) return vk_fail(r, "vkCreateBuffer");
    VkMemoryRequirements req;
    vkf.vkGetBufferMemoryRequirements(st->device, out->buf, &req);
    if (!(req.memoryTypeBits & (1u << type))) {
        vk_buf_destroy(st, out);
        return vk_host->set_error(LUMEN_ERR_UNSUPPORTED,
                                  "vulkan: storage buffers cannot live in memory type %u", type);
    }
    VkMemoryAllocateInfo mai = {.sType = VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO,
                                .allocationSize = req.size,
                                .memoryTypeIndex = type};
    void *map = NULL;
    if ((r = vkf.vkAllocateMemory(st->device, &mai, NULL, &out->mem)) ||
        (r = vkf.vkBindBufferMemory(st->device, out->buf, out->mem, 0)) ||
        (mapped && (r = vkf.vkMapMemory(st->device, out->mem, 0, VK_WHOLE_SIZE, 0, &map)))) {
        vk_buf_destroy(st, out);
        return vk_fail(r, "device memory");
    }
    out->map = map;
    out->addr = map;
    if (!mapped && addressed && !(out->addr = reserve(size))) {
        vk_buf_destroy(st, out);
        return vk_host->set_error(LUMEN_ERR_OUT_OF_MEMORY, "vulkan: no address range left");
    }
    out->reserved = !mapped && addressed;
    out->size = size;
    st->used += size;
    return LUMEN_OK;
}

void vk_buf_destroy(vk_state *st, vk_buf *b)
{
    /* freeing the memory unmaps it */
    if (b->buf) vkf.vkDestroyBuffer(st->device, b->buf, NULL);
    if (b->mem) vkf.vkFreeMemory(st->device, b->mem, NULL);
    if (b->reserved) munmap(b->addr, b->size);
    st->used -= b->size;
    memset(b, 0, sizeof *b);
}

const vk_buf *vk_find(const vk_state *st, const void *p, size_t bytes)
{
    const char *c = p;
    for (int i = 0; i < st->n_allocs; i++) {
        const vk_buf *b = &st->allocs[i];
        if (c >= b->addr && c <= b->addr + b->size && bytes <= (size_t)(b->addr + b->size - c))
            return b;
    }
    return NULL;
}

static lumen_status vk_alloc(lumen_context *ctx, size_t bytes, void **out)
{
    vk_state *st = vk_host->state(ctx);
    lumen_status s =
        vk_grow(&st->allocs, st->n_allocs, &st->cap_allocs, sizeof *st->allocs, "allocation table");
    if (s) return s;
    vk_buf b;
    s = vk_buf_create(ctx, st, bytes, VK_MEM_DEVICE, true, &b);
    if (s == LUMEN_ERR_OUT_OF_MEMORY && st->n_scratch) { /* the idle scratch pool goes first */
        vk_scratch_trim(st);
        s = vk_buf_create(ctx, st, bytes, VK_MEM_DEVICE, true, &b);
    }
    if (s) return s;
    st->allocs[st->n_allocs++] = b;
    *out = b.addr;
    return LUMEN_OK;
}

static void vk_release(lumen_context *ctx, void *p)
{
    vk_state *st = vk_host->state(ctx);
    if (!p || !st) return;
    for (int i = 0; i < st->n_allocs; i++)
        if (st->allocs[i].addr == p) {
            vk_buf_destroy(st, &st->allocs[i]);
            st->allocs[i] = st->allocs[--st->n_allocs];
            return;
        }
}

/* Every op has finished when run() returns, so mapped memory is copied with memcpy, with no
 * queue work to order it against; unmapped memory goes through a staging buffer. */
static lumen_status device_copy(lumen_context *ctx, void *host, const void *dev, size_t bytes,
                                bool to_device)
{
    vk_state *st = vk_host->state(ctx);
    const vk_buf *b = vk_find(st, dev, bytes);
    if (!b)
        return vk_host->set_error(LUMEN_ERR_INVALID_ARGUMENT,
                                  "vulkan: %zu bytes at %p are not in one device buffer", bytes,
                                  dev);
    const size_t off = (size_t)((const char *)dev - b->addr);
    if (b->map) {
        if (to_device)
            memcpy(b->map + off, host, bytes);
        else
            memcpy(host, b->map + off, bytes);
        return LUMEN_OK;
    }
    lumen_status s = vk_copy_through_staging(ctx, st, b, off, host, bytes, to_device);
    vk_scratch_release_all(st);
    return s;
}

static lumen_status vk_upload(lumen_context *ctx, void *dst, const void *src, size_t bytes)
{
    return device_copy(ctx, (void *)src, dst, bytes, true);
}

static lumen_status vk_download(lumen_context *ctx, void *dst, const void *src, size_t bytes)
{
    return device_copy(ctx, dst, src, bytes, false);
}

static lumen_status vk_synchronize(lumen_context *ctx)
{
    (void)ctx; /* run() waits for its own fence */
    return LUMEN_OK;
}

/* ---- ops ------------------------------------------------------------------------------- */

/* One file per op kind (direct.c, separable.c ...); a kind without an entry runs on the CPU. */
static const vk_op_impl *const op_impls[LUMEN_OP_KIND_COUNT] = {
    [LUMEN_OP_FILTER_DIRECT] = &vk_op_direct, [LUMEN_OP_FILTER_SEPARABLE] = &vk_op_separable,
    [LUMEN_OP_FILTER_FFT] = &vk_op_fft,       [LUMEN_OP_GAUSSIAN_FAST] = &vk_op_gauss_fast,
    [LUMEN_OP_CONV2D] = &vk_op_conv2d,        [LUMEN_OP_CONV_TRANSPOSE2D] = &vk_op_conv_transpose2d,
    [LUMEN_OP_RESIZE] = &vk_op_resize,
};

static const vk_op_impl *impl_of(const lumen_op *op)
{
    return op->kind >= 0 && op->kind < LUMEN_OP_KIND_COUNT ? op_impls[op->kind] : NULL;
}

static bool vk_supports(lumen_context *ctx, const lumen_op *op)
{
    const vk_op_impl *impl = impl_of(op);
    if (!impl || !impl->supports || !vk_host->state(ctx)) return false;
    /* the shaders read every dtype (shaders/common.glsl); conv.c's supports takes f32 only */
    if (!lumen_op_dtypes_in(op, LUMEN_DTYPES_CLASSIC | (1u << LUMEN_F16) | (1u << LUMEN_BF16)))
        return false;
    const lumen_image *const *v = lumen_op_views(op);
    for (int i = 0; i < op->n_views; i++)
        if (!(impl->pieces ? vk_view_fits(ctx, v[i]) : vk_view_fits_range(ctx, v[i]))) return false;
    return impl->supports(ctx, op);
}

/* Every op records one submission and waits for it; its scratch buffers go back to the pool
 * afterwards, whatever happened. */
static lumen_status vk_run(lumen_context *ctx, const lumen_op *op, lumen_run_info *info)
{
    const vk_op_impl *impl = impl_of(op);
    if (!impl || !impl->run)
        return vk_host->set_error(LUMEN_ERR_UNSUPPORTED, "vulkan: no %d op", (int)op->kind);
    vk_state *st = vk_host->state(ctx);
    lumen_status s = impl->run(ctx, op, info);
    st->recording = false;
    vk_scratch_release_all(st);
    return s;
}

static const lumen_backend vk_backend = {
    .name = "vulkan",
    .supports = vk_supports,
    .run = vk_run,
    .cost = vk_cost,
    .device_count = vk_count,
    .device_info = vk_info,
    .state_create = vk_state_create,
    .state_destroy = vk_state_destroy,
    .alloc = vk_alloc,
    .release = vk_release,
    .upload = vk_upload,
    .download = vk_download,
    .synchronize = vk_synchronize,
    .device_driver = vk_driver,
};

__attribute__((visibility("default"))) lumen_status
lumen_module_init(int abi, const lumen_module_host *h, const lumen_backend **out)
{
    if (abi != LUMEN_MODULE_ABI) return LUMEN_ERR_UNSUPPORTED;
    vk_host = h;
    *out = &vk_backend;
    return LUMEN_OK;
}
