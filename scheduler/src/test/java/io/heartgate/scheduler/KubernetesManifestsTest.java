package io.heartgate.scheduler;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.MappingIterator;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.dataformat.yaml.YAMLFactory;
import io.fabric8.kubernetes.api.model.Container;
import io.fabric8.kubernetes.api.model.ContainerPort;
import io.fabric8.kubernetes.api.model.EnvVar;
import io.fabric8.kubernetes.api.model.GenericKubernetesResource;
import io.fabric8.kubernetes.api.model.HasMetadata;
import io.fabric8.kubernetes.api.model.Namespace;
import io.fabric8.kubernetes.api.model.PodSpec;
import io.fabric8.kubernetes.api.model.Probe;
import io.fabric8.kubernetes.api.model.Secret;
import io.fabric8.kubernetes.api.model.Service;
import io.fabric8.kubernetes.api.model.ServicePort;
import io.fabric8.kubernetes.api.model.Volume;
import io.fabric8.kubernetes.api.model.apps.DaemonSet;
import io.fabric8.kubernetes.api.model.apps.Deployment;
import io.fabric8.kubernetes.api.model.networking.v1.NetworkPolicy;
import io.fabric8.kubernetes.api.model.policy.v1.PodDisruptionBudget;
import io.heartgate.agent.AgentMain;
import io.heartgate.protocol.cli.Cli;
import io.heartgate.scheduler.trust.ApiKeys;
import io.heartgate.sim.SimMain;
import io.heartgate.testkit.CommandLineRun;
import java.lang.reflect.Method;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.HashSet;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import picocli.CommandLine;

/**
 * The Kubernetes manifests under deploy/kubernetes: every one parses into Kubernetes' typed model
 * with no field the model does not know, the kustomizations name files that exist, and what they
 * say of Heartgate holds: container arguments are flags the jars accept, environment variables are
 * ones they read, probes and Services point at ports the containers declare, and every Secret key
 * a pod reads is defined (the scheduler's own parse as its files).
 */
class KubernetesManifestsTest {

    private static final Path ROOT = Path.of("../deploy/kubernetes");
    private static final ObjectMapper YAML = new ObjectMapper(new YAMLFactory());
    private static final Map<String, Class<? extends HasMetadata>> TYPED = Map.of(
            "v1/Namespace", Namespace.class,
            "v1/Secret", Secret.class,
            "v1/Service", Service.class,
            "apps/v1/Deployment", Deployment.class,
            "apps/v1/DaemonSet", DaemonSet.class,
            "policy/v1/PodDisruptionBudget", PodDisruptionBudget.class,
            "networking.k8s.io/v1/NetworkPolicy", NetworkPolicy.class);
    /** Custom resources of the operators the manifests use: kept generic, their API version checked. */
    private static final Set<String> CUSTOM = Set.of(
            "kafka.strimzi.io/v1beta2/Kafka", "kafka.strimzi.io/v1beta2/KafkaNodePool",
            "kafka.strimzi.io/v1beta2/KafkaTopic", "monitoring.coreos.com/v1/ServiceMonitor",
            "keda.sh/v1alpha1/ScaledObject");
    private static final Pattern ENV_IN_HELP = Pattern.compile("\\[env ([A-Z0-9_]+)\\]");

    private record Manifest(Path file, HasMetadata object) {
    }

    private static List<Path> files() throws Exception {
        try (Stream<Path> s = Files.walk(ROOT)) {
            return s.filter(p -> p.toString().endsWith(".yaml")).sorted().toList();
        }
    }

    private static List<JsonNode> documents(Path file) throws Exception {
        List<JsonNode> docs = new ArrayList<>();
        try (JsonParser parser = YAML.getFactory().createParser(file.toFile());
             MappingIterator<JsonNode> it = YAML.readValues(parser, JsonNode.class)) {
            while (it.hasNext()) {
                JsonNode d = it.next();
                if (d != null && !d.isNull() && !d.isEmpty()) {
                    docs.add(d);
                }
            }
        }
        return docs;
    }

    private static List<Manifest> manifests() throws Exception {
        List<Manifest> out = new ArrayList<>();
        for (Path f : files()) {
            if (f.getFileName().toString().equals("kustomization.yaml")) {
                continue;
            }
            for (JsonNode d : documents(f)) {
                String type = d.path("apiVersion").asText() + "/" + d.path("kind").asText();
                Class<? extends HasMetadata> typed = TYPED.get(type);
                assertThat(typed != null || CUSTOM.contains(type)).as("%s: %s is no kind these manifests may use", f, type)
                        .isTrue();
                Class<? extends HasMetadata> as = typed != null ? typed : GenericKubernetesResource.class;
                out.add(new Manifest(f, YAML.treeToValue(d, as)));
            }
        }
        return out;
    }

    @Test
    void everyManifestIsATypedKubernetesObjectWithNoFieldTheModelDoesNotKnow() throws Exception {
        List<Manifest> all = manifests();
        assertThat(all).hasSizeGreaterThanOrEqualTo(15);
        for (Manifest m : all) {
            assertThat(m.object().getMetadata().getName()).as("%s: a name", m.file()).isNotBlank();
            if (!(m.object() instanceof GenericKubernetesResource)) {
                assertThat(unknownFields(m.object(), "", new IdentityHashMap<>())).as("%s: fields the model does not know",
                        m.file()).isEmpty();
            }
        }
    }

    /** Returns the paths of fields a typed object took into its catch-all map: a misspelt or misplaced key. */
    private static List<String> unknownFields(Object o, String path, IdentityHashMap<Object, Boolean> seen) throws Exception {
        List<String> found = new ArrayList<>();
        if (o == null || seen.put(o, true) != null || !o.getClass().getName().startsWith("io.fabric8.")) {
            if (o instanceof Collection<?> c) {
                int i = 0;
                for (Object e : c) {
                    found.addAll(unknownFields(e, path + "[" + i++ + "]", seen));
                }
            } else if (o instanceof Map<?, ?> map) {
                for (Map.Entry<?, ?> e : map.entrySet()) {
                    found.addAll(unknownFields(e.getValue(), path + "." + e.getKey(), seen));
                }
            }
            return found;
        }
        for (Method get : o.getClass().getMethods()) {
            if (get.getParameterCount() != 0 || !get.getName().startsWith("get") || get.getName().equals("getClass")) {
                continue;
            }
            Object v = get.invoke(o);
            if (get.getName().equals("getAdditionalProperties")) {
                if (v instanceof Map<?, ?> extra && !extra.isEmpty()) {
                    extra.keySet().forEach(k -> found.add(path + "." + k));
                }
            } else {
                found.addAll(unknownFields(v, path + "." + get.getName().substring(3), seen));
            }
        }
        return found;
    }

    @Test
    void everyKustomizationNamesFilesThatExist() throws Exception {
        int kustomizations = 0;
        for (Path f : files()) {
            if (!f.getFileName().toString().equals("kustomization.yaml")) {
                continue;
            }
            kustomizations++;
            JsonNode k = documents(f).get(0);
            assertThat(k.path("apiVersion").asText()).startsWith("kustomize.config.k8s.io/");
            List<String> named = new ArrayList<>();
            k.path("resources").forEach(n -> named.add(n.asText()));
            k.path("components").forEach(n -> named.add(n.asText()));
            k.path("patches").forEach(n -> named.add(n.path("path").asText()));
            assertThat(named).as("%s names something", f).isNotEmpty();
            for (String name : named) {
                assertThat(f.getParent().resolve(name)).as("%s names %s", f, name).exists();
            }
        }
        assertThat(kustomizations).isGreaterThanOrEqualTo(7);
    }

    /** Returns every pod spec of the manifests (Deployments and DaemonSets, patches included). */
    private static List<PodSpec> pods(List<Manifest> all) {
        List<PodSpec> pods = new ArrayList<>();
        for (Manifest m : all) {
            if (m.object() instanceof Deployment d && d.getSpec().getTemplate() != null) {
                pods.add(d.getSpec().getTemplate().getSpec());
            } else if (m.object() instanceof DaemonSet d) {
                pods.add(d.getSpec().getTemplate().getSpec());
            }
        }
        return pods;
    }

    private static CommandLine commandLineOf(String jar) {
        return switch (jar) {
            case "/opt/heartgate/scheduler.jar" -> SchedulerMain.commandLine();
            case "/opt/heartgate/heartbeat-agent.jar" -> Cli.commandLine("heartbeat-agent", new AgentMain());
            case "/opt/heartgate/inference-sim.jar" -> Cli.commandLine("inference-sim", new SimMain());
            default -> throw new AssertionError("no such jar in the image: " + jar);
        };
    }

    @Test
    void heartgateContainersUseFlagsAndVariablesTheJarsRead() throws Exception {
        Set<String> jars = new HashSet<>();
        for (PodSpec pod : pods(manifests())) {
            for (Container c : pod.getContainers()) {
                if (!"heartgate".equals(c.getImage())) {
                    continue;
                }
                if (c.getArgs() != null && !c.getArgs().isEmpty()) {
                    String jar = c.getArgs().get(0);
                    jars.add(jar);
                    List<String> flags = c.getArgs().subList(1, c.getArgs().size());
                    commandLineOf(jar).parseArgs(flags.toArray(String[]::new)); // throws on a flag it does not take
                    String help = CommandLineRun.run(commandLineOf(jar), "--help").out();
                    Set<String> read = new HashSet<>(Set.of("JAVA_TOOL_OPTIONS"));
                    Matcher m = ENV_IN_HELP.matcher(help);
                    while (m.find()) {
                        read.add(m.group(1));
                    }
                    Set<String> referenced = new HashSet<>(); // set only for $(NAME) in arguments or other variables
                    List<String> texts = new ArrayList<>(flags);
                    for (EnvVar e : c.getEnv() == null ? List.<EnvVar>of() : c.getEnv()) {
                        if (e.getValue() != null) {
                            texts.add(e.getValue());
                        }
                    }
                    for (String text : texts) {
                        Matcher ref = Pattern.compile("\\$\\(([A-Z0-9_]+)\\)").matcher(text);
                        while (ref.find()) {
                            referenced.add(ref.group(1));
                        }
                    }
                    for (EnvVar e : c.getEnv() == null ? List.<EnvVar>of() : c.getEnv()) {
                        assertThat(read.contains(e.getName()) || referenced.contains(e.getName()))
                                .as("%s in %s: a variable %s reads", e.getName(), c.getName(), jar).isTrue();
                    }
                }
            }
        }
        assertThat(jars).containsExactlyInAnyOrder("/opt/heartgate/scheduler.jar", "/opt/heartgate/heartbeat-agent.jar",
                "/opt/heartgate/inference-sim.jar");
    }

    @Test
    void probesAndServicesPointAtPortsTheSchedulerDeclares() throws Exception {
        List<Manifest> all = manifests();
        Deployment scheduler = all.stream().map(Manifest::object).filter(o -> o instanceof Deployment)
                .map(o -> (Deployment) o).filter(d -> d.getMetadata().getName().equals("heartgate-scheduler")
                        && d.getSpec().getReplicas() != null).findFirst().orElseThrow();
        Container c = scheduler.getSpec().getTemplate().getSpec().getContainers().get(0);
        Map<String, Integer> ports = new HashMap<>();
        for (ContainerPort p : c.getPorts()) {
            ports.put(p.getName(), p.getContainerPort());
        }
        List<String> args = c.getArgs();
        assertThat(ports).containsEntry("proxy", Integer.parseInt(args.get(args.indexOf("--port") + 1)))
                .containsEntry("admin", Integer.parseInt(args.get(args.indexOf("--admin-port") + 1)));
        for (Probe p : List.of(c.getReadinessProbe(), c.getLivenessProbe())) {
            assertThat(p.getHttpGet().getPort().getStrVal()).isEqualTo("admin");
        }
        assertThat(c.getReadinessProbe().getHttpGet().getPath()).isEqualTo("/readyz");
        assertThat(c.getLivenessProbe().getHttpGet().getPath()).isEqualTo("/healthz");
        for (Manifest m : all) {
            if (m.object() instanceof Service s) {
                for (ServicePort sp : s.getSpec().getPorts()) {
                    assertThat(ports).as("%s targets a port the scheduler declares", s.getMetadata().getName())
                            .containsKey(sp.getTargetPort().getStrVal());
                }
            }
        }
        assertThat(scheduler.getSpec().getReplicas()).isEqualTo(2);
        assertThat(scheduler.getSpec().getTemplate().getSpec().getAffinity().getPodAntiAffinity()).isNotNull();
        PodDisruptionBudget pdb = all.stream().map(Manifest::object).filter(o -> o instanceof PodDisruptionBudget)
                .map(o -> (PodDisruptionBudget) o).findFirst().orElseThrow();
        assertThat(pdb.getSpec().getSelector().getMatchLabels())
                .isEqualTo(scheduler.getSpec().getSelector().getMatchLabels());
    }

    @Test
    void everySecretKeyAPodReadsIsDefinedAndTheSchedulersParse() throws Exception {
        List<Manifest> all = manifests();
        Map<String, Map<String, String>> secrets = new HashMap<>();
        for (Manifest m : all) {
            if (m.object() instanceof Secret s) {
                Map<String, String> keys = new HashMap<>();
                if (s.getStringData() != null) {
                    keys.putAll(s.getStringData());
                }
                if (s.getData() != null) {
                    s.getData().keySet().forEach(k -> keys.put(k, ""));
                }
                secrets.put(s.getMetadata().getName(), keys);
            }
        }
        int read = 0;
        for (PodSpec pod : pods(all)) {
            for (Volume v : pod.getVolumes() == null ? List.<Volume>of() : pod.getVolumes()) {
                if (v.getSecret() != null) {
                    Map<String, String> keys = secrets.get(v.getSecret().getSecretName());
                    assertThat(keys).as("Secret %s", v.getSecret().getSecretName()).isNotNull();
                    for (var item : v.getSecret().getItems()) {
                        assertThat(keys).as("Secret %s", v.getSecret().getSecretName()).containsKey(item.getKey());
                        read++;
                    }
                }
            }
            for (Container c : pod.getContainers()) {
                for (EnvVar e : c.getEnv() == null ? List.<EnvVar>of() : c.getEnv()) {
                    if (e.getValueFrom() != null && e.getValueFrom().getSecretKeyRef() != null) {
                        var ref = e.getValueFrom().getSecretKeyRef();
                        assertThat(secrets.get(ref.getName())).as("Secret %s", ref.getName()).containsKey(ref.getKey());
                        read++;
                    }
                }
            }
        }
        assertThat(read).isGreaterThanOrEqualTo(4);
        Map<String, String> scheduler = secrets.get("heartgate-scheduler");
        assertThat(ApiKeys.parse(scheduler.get("api-keys")).size()).isZero();
        assertThat(scheduler.get("admin-token").strip()).hasSizeGreaterThanOrEqualTo(Scheduler.ADMIN_TOKEN_MIN);
    }
}
