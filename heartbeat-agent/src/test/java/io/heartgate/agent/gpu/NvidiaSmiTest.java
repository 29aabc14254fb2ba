package io.heartgate.agent.gpu;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.heartgate.agent.Samples;
import io.heartgate.protocol.Gpu;
import java.io.IOException;
import java.net.URISyntaxException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class NvidiaSmiTest {

    @Test
    void parsesTheAgentsQueryOnAnIdleH200() {
        assertThat(NvidiaSmi.parse(Samples.read("nvidia-smi-agent-query-h200-idle.txt")))
                .hasValue(List.of(new Gpu("NVIDIA H200", 0.0, 0L, 143771L)));
    }

    @Test
    void parsesTheAgentsQueryOnAnH200UnderLoad() {
        assertThat(NvidiaSmi.parse(Samples.read("nvidia-smi-agent-query-h200-load.txt")))
                .hasValue(List.of(new Gpu("NVIDIA H200", 1.0, 21619L, 143771L)));
    }

    @Test
    void parsesHeaderFormsWithAndWithoutUnits() {
        assertThat(NvidiaSmi.parseWithHeader(Samples.read("nvidia-smi-agent-query-header-h200-idle.txt")))
                .hasValue(List.of(new Gpu("NVIDIA H200", 0.0, 0L, 143771L)));
        assertThat(NvidiaSmi.parseWithHeader(Samples.read("nvidia-smi-query-gpu-full-csv-h200-load.txt")))
                .hasValueSatisfying(gpus -> {
                    assertThat(gpus).hasSize(1);
                    assertThat(gpus.get(0).name()).contains("H200");
                    assertThat(gpus.get(0).utilization()).isEqualTo(1.0);
                    assertThat(gpus.get(0).memoryUsedMiB()).isEqualTo(32362L);
                    assertThat(gpus.get(0).memoryTotalMiB()).isEqualTo(143771L);
                });
    }

    @Test
    void leavesOutUtilizationThatMigModeDoesNotReport() {
        assertThat(NvidiaSmi.parseWithHeader(Samples.read("nvidia-smi-query-gpu-full-csv-h100-mig-idle.txt")))
                .hasValueSatisfying(gpus -> {
                    assertThat(gpus.get(0).name()).contains("H100");
                    assertThat(gpus.get(0).utilization()).isNull();
                    assertThat(gpus.get(0).memoryTotalMiB()).isPositive();
                });
        assertThat(NvidiaSmi.parseWithHeader(Samples.read("nvidia-smi-query-gpu-full-csv-rtx4080-idle.txt")))
                .hasValueSatisfying(gpus -> assertThat(gpus.get(0).name()).contains("4080"));
    }

    @Test
    void rejectsErrorOutputs() {
        assertThat(NvidiaSmi.parse(Samples.read("nvidia-smi-no-driver-error.txt"))).isEmpty();
        assertThat(NvidiaSmi.parse(Samples.read("nvidia-smi-invalid-field.txt"))).isEmpty();
        assertThat(NvidiaSmi.parse(Samples.read("nvidia-smi-fan-speed-not-supported.txt"))).isEmpty();
        assertThat(NvidiaSmi.parse("")).isEmpty();
    }

    @Test
    void reportsAMissingExecutable() {
        NvidiaSmi smi = new NvidiaSmi("/nonexistent/nvidia-smi", Duration.ofSeconds(2));

        assertThatThrownBy(smi::read).isInstanceOf(IOException.class);
    }

    @Test
    void runsTheExecutableAndReportsAFailingDriver(@TempDir Path dir) throws IOException {
        Path ok = script(dir, "ok", "cat '" + sample("nvidia-smi-agent-query-h200-load.txt") + "'");
        Path broken = script(dir, "broken", "cat '" + sample("nvidia-smi-no-driver-error.txt") + "'; exit 9");

        assertThat(new NvidiaSmi(ok.toString(), Duration.ofSeconds(5)).read())
                .containsExactly(new Gpu("NVIDIA H200", 1.0, 21619L, 143771L));
        assertThatThrownBy(() -> new NvidiaSmi(broken.toString(), Duration.ofSeconds(5)).read())
                .isInstanceOf(IOException.class)
                .hasMessageContaining("status 9")
                .hasMessageContaining("couldn't communicate with the NVIDIA driver");
    }

    private static String sample(String name) {
        try {
            return Path.of(NvidiaSmiTest.class.getResource("/samples/" + name).toURI()).toString();
        } catch (URISyntaxException e) {
            throw new IllegalStateException(e);
        }
    }

    private static Path script(Path dir, String name, String body) throws IOException {
        Path p = dir.resolve(name);
        Files.writeString(p, "#!/bin/sh\n" + body + "\n");
        Files.setPosixFilePermissions(p, PosixFilePermissions.fromString("rwx------"));
        return p;
    }
}
