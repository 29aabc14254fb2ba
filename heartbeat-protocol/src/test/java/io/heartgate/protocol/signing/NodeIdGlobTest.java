package io.heartgate.protocol.signing;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.charset.StandardCharsets;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import org.junit.jupiter.params.provider.ValueSource;

class NodeIdGlobTest {

    @ParameterizedTest(name = "{0} matches {1}: {2}")
    @CsvSource({
            "gpu-*, gpu-a1, true",
            "gpu-*, gpu-, true",
            "gpu-*, gpu-rack1.a:0, true",
            "gpu-*, gpu, false",
            "gpu-*, cpu-a1, false",
            "gpu-*, xgpu-a1, false",
            "rack1-*-a, rack1-x-a, true",
            "rack1-*-a, rack1-x-y-a, true",
            "rack1-*-a, rack1--a, true",
            "rack1-*-a, rack1-x-b, false",
            "rack1-*-a, rack1-x-a1, false",
            "rack1-*-a, rack2-x-a, false",
            "gpu-a, gpu-a, true",
            "gpu-a, gpu-A, false",
            "gpu-a, gpu-ab, false",
            "gpu-a, gpu-, false",
            "*, anything.at:all, true",
            "*-*-*, a-b-c, true",
            "*-*-*, a-b, false",
            "*a*a*, banana, true",
            "*a*a*, bnn, false",
    })
    void matchesLikeAShellGlobOverNodeIdCharacters(String pattern, String nodeId, boolean matches) {
        assertThat(NodeIdGlob.parse(pattern).matches(nodeId.getBytes(StandardCharsets.UTF_8))).isEqualTo(matches);
    }

    @ParameterizedTest
    @ValueSource(strings = {"gpu a", "gpü", "gpu/1", "gpu\t1"})
    void starNeverMatchesCharactersOutsideNodeIds(String nodeId) {
        assertThat(NodeIdGlob.parse("*").matches(nodeId.getBytes(StandardCharsets.UTF_8))).isFalse();
    }

    @ParameterizedTest
    @ValueSource(strings = {"", "gpu-?", "gpu-[ab]", "gpu/*", "gpü-*"})
    void refusesPatternsWithOtherCharacters(String pattern) {
        assertThat(NodeIdGlob.parse(pattern)).isNull();
    }
}
