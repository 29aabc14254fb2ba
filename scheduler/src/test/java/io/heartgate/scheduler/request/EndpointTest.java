package io.heartgate.scheduler.request;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

class EndpointTest {

    @ParameterizedTest
    @CsvSource({
        "/v1/chat/completions, OPENAI_CHAT",
        "/v1/chat/completions?x=1, OPENAI_CHAT",
        "/v1/completions, OPENAI_COMPLETIONS",
        "/v1/models, OPENAI_MODELS",
        "/v1/models/llama3:8b, OPENAI_MODEL",
        "/v1/models/org%2Fname?a=b, OPENAI_MODEL",
        "/v1/models/, OTHER",
        "/api/chat, OLLAMA_CHAT",
        "/api/show, OLLAMA_SHOW",
        "/api/push, OLLAMA_PUSH",
        "/api/unknown, OTHER",
        "/v1/chat/completionsX, OTHER",
        "/, OTHER",
    })
    void aTargetIsItsPathsEndpoint(String target, Endpoint expected) {
        assertThat(Endpoint.of(target)).isEqualTo(expected);
    }

    @Test
    void theRulesTheRequestPathReadsFollowTheServers() {
        assertThat(Endpoint.OLLAMA_CHAT.streamsByDefault()).isTrue();
        assertThat(Endpoint.OPENAI_CHAT.streamsByDefault()).isFalse();
        assertThat(Endpoint.OLLAMA_SHOW.modelInName()).isTrue();
        assertThat(Endpoint.OLLAMA_PULL.modelInName()).isTrue();
        assertThat(Endpoint.OLLAMA_DELETE.modelInName()).isTrue();
        assertThat(Endpoint.OLLAMA_CHAT.modelInName()).isFalse();
        assertThat(Stream.of(Endpoint.values()).filter(e -> e.role() == Endpoint.Role.MANAGEMENT).map(Endpoint::path))
                .containsExactlyInAnyOrder("/api/pull", "/api/delete", "/api/create", "/api/copy", "/api/push");
        assertThat(Stream.of(Endpoint.values()).filter(Endpoint::usageWhenAsked))
                .containsExactlyInAnyOrder(Endpoint.OPENAI_CHAT, Endpoint.OPENAI_COMPLETIONS);
    }

    /** The table is the only place the scheduler writes an endpoint's path. */
    @Test
    void noOtherMainClassWritesAnEndpointPath() throws IOException {
        Pattern literal = Pattern.compile("\"/(v1|api)/");
        List<Path> offenders;
        try (Stream<Path> files = Stream.concat(Files.walk(Path.of("src/main/java")),
                Files.walk(Path.of("../scheduler-core/src/main/java")))) {
            offenders = files.filter(p -> p.toString().endsWith(".java"))
                    .filter(p -> !p.endsWith(Path.of("io/heartgate/scheduler/request/Endpoint.java")))
                    .filter(p -> {
                        try {
                            return Files.readAllLines(p).stream().map(String::strip)
                                    .filter(l -> !l.startsWith("*") && !l.startsWith("//") && !l.startsWith("/*"))
                                    .anyMatch(l -> literal.matcher(l).find());
                        } catch (IOException e) {
                            throw new IllegalStateException(e);
                        }
                    })
                    .toList();
        }
        assertThat(offenders).isEmpty();
    }
}
