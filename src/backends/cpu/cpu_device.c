/* The CPU described as a device: name from /proc/cpuinfo, memory from /proc/meminfo. */
#include "cpu.h"

#include <stdio.h>
#include <string.h>
#include <sys/sysinfo.h>

int lumen_cpu_device_count(void) { return 1; }

/* "model name : Intel(R) Xeon(R) ..." -> the part after the colon; "CPU" if none. */
static void cpu_model_name(char *out, size_t size)
{
    snprintf(out, size, "CPU");
    FILE *f = fopen("/proc/cpuinfo", "r");
    if (!f) return;
    char line[256];
    while (fgets(line, sizeof line, f)) {
        if (strncmp(line, "model name", 10) != 0) continue;
        const char *v = strchr(line, ':');
        if (!v) break;
        v += strspn(v + 1, " \t") + 1;
        snprintf(out, size, "%.*s", (int)strcspn(v, "\n"), v);
        break;
    }
    fclose(f);
}

/* MemAvailable counts reclaimable page cache, which sysinfo's freeram does not. */
static uint64_t mem_available(void)
{
    unsigned long long kib = 0;
    FILE *f = fopen("/proc/meminfo", "r");
    if (!f) return 0;
    char line[128];
    while (fgets(line, sizeof line, f))
        if (sscanf(line, "MemAvailable: %llu kB", &kib) == 1) break;
    fclose(f);
    return (uint64_t)kib * 1024;
}

bool lumen_cpu_fits_in_memory(uint64_t bytes)
{
    struct sysinfo si;
    if (sysinfo(&si) != 0) return true; /* unknown: leave it to malloc */
    return bytes / si.mem_unit <= (uint64_t)si.totalram + si.totalswap;
}

lumen_status lumen_cpu_device_info(int i, lumen_device_info *info)
{
    if (i != 0) return lumen_set_error(LUMEN_ERR_INVALID_ARGUMENT, "device: no CPU device %d", i);
    memset(info, 0, sizeof *info);
    cpu_model_name(info->name, sizeof info->name);
    snprintf(info->backend, sizeof info->backend, "cpu");
    info->kind = LUMEN_DEVICE_CPU;
    struct sysinfo si;
    if (sysinfo(&si) == 0) {
        info->memory_total = (uint64_t)si.totalram * si.mem_unit;
        info->memory_free = (uint64_t)si.freeram * si.mem_unit;
    }
    uint64_t avail = mem_available();
    if (avail) info->memory_free = avail;
    return LUMEN_OK;
}
