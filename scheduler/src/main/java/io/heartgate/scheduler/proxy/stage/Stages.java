package io.heartgate.scheduler.proxy.stage;

import io.heartgate.scheduler.admission.RateLimits;
import io.heartgate.scheduler.request.RequestFacts;
import io.heartgate.scheduler.routing.ResponseHomes;
import io.heartgate.scheduler.table.TableSnapshot;
import io.heartgate.scheduler.trust.ApiKeys;
import io.heartgate.scheduler.trust.UpstreamKey;
import java.util.ArrayList;
import java.util.EnumSet;
import java.util.List;
import java.util.Set;
import java.util.function.Supplier;

/** Builds the proxy's list of stages. */
public final class Stages {

    private Stages() {
    }

    /**
     * Who may use the proxy and what it shows the nodes.
     *
     * @param keys the API keys in force, read per request; {@code null} when the port is open
     * @param upstream the key nodes require, or {@code null}
     * @param https whether clients reach the proxy over TLS (the nodes' {@code X-Forwarded-Proto})
     * @param modelManagement whether Ollama's model-management calls go to the node a header names
     *     ({@code --allow-model-management}); else they are refused
     * @param forceUsage whether OpenAI streaming requests are made to ask for
     *     {@code stream_options.include_usage}, so their tokens are counted ({@code --force-usage})
     * @param limits the keys' rate limits, shared with the other replicas; {@code null}: the proxy keeps its own
     */
    public record Access(Supplier<ApiKeys> keys, UpstreamKey upstream, boolean https, boolean modelManagement,
                         boolean forceUsage, RateLimits limits) {
        /** Plain HTTP, no API keys, no key for the nodes: clients' own credentials pass through. */
        public static final Access OPEN = new Access(null, null, false);

        /** Without model management through the proxy, nor forced usage chunks. */
        public Access(Supplier<ApiKeys> keys, UpstreamKey upstream, boolean https) {
            this(keys, upstream, https, false, false);
        }

        /** With rate limits of this proxy's own (a replica whose limits are shared passes {@code limits}). */
        public Access(Supplier<ApiKeys> keys, UpstreamKey upstream, boolean https, boolean modelManagement,
                      boolean forceUsage) {
            this(keys, upstream, https, modelManagement, forceUsage, null);
        }

        /** Without forced usage chunks. */
        public Access(Supplier<ApiKeys> keys, UpstreamKey upstream, boolean https, boolean modelManagement) {
            this(keys, upstream, https, modelManagement, false);
        }
    }

    /** Returns every body fact some of {@code stages} reads, besides the model. */
    public static Set<RequestFacts.Field> fieldsRead(List<Stage> stages) {
        EnumSet<RequestFacts.Field> fields = EnumSet.noneOf(RequestFacts.Field.class);
        stages.forEach(s -> fields.addAll(s.reads()));
        return fields;
    }

    /**
     * Returns the stages, in order, holding keys to their {@code limits}: the caller's key and its rate
     * limits when the access has keys, the node's request headers, the nodes' own key when it has one,
     * forced usage chunks, the Responses API's follow-ups (sent to the node that made the response
     * they continue, which {@code responses} knows), the model catalogue (answered here), then the
     * model-management rule, which pins its calls to one node. Stages that need the client's headers (authentication reads and
     * removes the caller's key) go before {@code ForwardedHeaders}. A request every stage passed on is
     * routed after them by the admission dispatcher, first attempt and retries alike.
     */
    public static List<Stage> standard(Supplier<TableSnapshot> table, Access access, RateLimits limits,
                                       ResponseHomes responses) {
        List<Stage> stages = new ArrayList<>(4);
        if (access.keys() != null) {
            stages.add(new Authentication(access.keys(), limits));
            stages.add(new Limits(access.keys(), limits));
        }
        stages.add(new ForwardedHeaders(access.https()));
        if (access.upstream() != null) {
            stages.add(new UpstreamCredentials(access.upstream()));
        }
        if (access.forceUsage()) {
            stages.add(new ForceUsage());
        }
        stages.add(new ResponseFollowUp(responses));
        stages.add(new Catalogue(table));
        stages.add(new ModelManagement(table, access.modelManagement()));
        return List.copyOf(stages);
    }
}
