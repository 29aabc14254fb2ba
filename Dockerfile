# Builds the jars with Maven, then runs the scheduler, agent and simulator on a JRE as a non-root user.
# The same image runs the scheduler (default), an agent or a simulator (see docker-compose-env.yml).
FROM maven:3.9-eclipse-temurin-17 AS build
WORKDIR /src
COPY pom.xml .
COPY heartbeat-protocol heartbeat-protocol
COPY embedded-kafka embedded-kafka
COPY inference-sim inference-sim
COPY loadgen loadgen
COPY heartbeat-agent heartbeat-agent
COPY scheduler-core scheduler-core
COPY scheduler scheduler
RUN mvn -B -q -DskipTests package

# The agent's own image, for a sidecar beside every GPU server: docker build --target agent -t heartgate-agent .
# A runtime of only the modules the agent uses (jdeps --ignore-missing-deps --print-module-deps
# --multi-release 17 heartbeat-agent.jar, plus jdk.crypto.ec for TLS and java.xml for logback), made
# by jlink with its class-data archive, on a slim base. Same entrypoint shape as the image below.
FROM build AS agent-runtime
RUN jlink --add-modules java.base,java.desktop,java.naming,java.net.http,java.security.jgss,java.security.sasl,java.sql,jdk.httpserver,jdk.management,jdk.unsupported,jdk.crypto.ec,java.xml \
    --strip-debug --no-man-pages --no-header-files --generate-cds-archive --output /opt/jre

FROM debian:12-slim AS agent
RUN useradd --system --uid 10001 --home-dir /opt/heartgate heartgate && mkdir -p /opt/heartgate
COPY --from=agent-runtime /opt/jre /opt/jre
COPY --from=build /src/heartbeat-agent/target/heartbeat-agent.jar /opt/heartgate/heartbeat-agent.jar
USER heartgate
WORKDIR /opt/heartgate
# The lightest JVM settings measured (docs/BENCHMARKS.md, the agent's footprint).
ENV JAVA_TOOL_OPTIONS="-Xmx24m -Xss256k -XX:+UseSerialGC -XX:TieredStopAtLevel=1 -XX:CICompilerCount=1 -XX:ReservedCodeCacheSize=12m -XX:-UsePerfData"
ENTRYPOINT ["/opt/jre/bin/java", "-XX:+ExitOnOutOfMemoryError", "-jar"]
CMD ["/opt/heartgate/heartbeat-agent.jar"]

FROM eclipse-temurin:17-jre
RUN apt-get update -q && apt-get install -y -q --no-install-recommends curl \
    && rm -rf /var/lib/apt/lists/* \
    && useradd --system --uid 10001 --home-dir /opt/heartgate heartgate \
    && mkdir -p /opt/heartgate /var/lib/heartgate && chown heartgate /var/lib/heartgate
COPY --from=build /src/scheduler/target/scheduler.jar /opt/heartgate/scheduler.jar
COPY --from=build /src/heartbeat-agent/target/heartbeat-agent.jar /opt/heartgate/heartbeat-agent.jar
COPY --from=build /src/inference-sim/target/inference-sim.jar /opt/heartgate/inference-sim.jar
USER heartgate
WORKDIR /opt/heartgate
EXPOSE 8080 8081
HEALTHCHECK --interval=5s --timeout=3s --start-period=30s --retries=3 \
    CMD curl -fsS http://127.0.0.1:8081/readyz || exit 1
ENTRYPOINT ["java", "-XX:+ExitOnOutOfMemoryError", "-jar"]
CMD ["/opt/heartgate/scheduler.jar"]
