package io.heartgate.protocol;

/**
 * Holds one GPU's figures as read by the agent; each is {@code null} when the driver did not report it
 * (MIG instances, for example, report no utilization).
 *
 * @param name the product name, such as {@code NVIDIA H100}, or {@code null}
 * @param utilization busy fraction, 0 to 1, or {@code null}
 * @param memoryUsedMiB memory in use in MiB, or {@code null}
 * @param memoryTotalMiB total memory in MiB, or {@code null}
 */
public record Gpu(String name, Double utilization, Long memoryUsedMiB, Long memoryTotalMiB) {
}
