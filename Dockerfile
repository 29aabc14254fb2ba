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
