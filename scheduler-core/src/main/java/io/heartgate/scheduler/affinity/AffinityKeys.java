package io.heartgate.scheduler.affinity;

import io.heartgate.protocol.InvalidSettingException;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;

/**
 * Where a request's affinity key comes from ({@code --affinity-key}): sources tried in order, the
 * first present wins. {@code header:NAME} is a request header, {@code body:FIELD} a top-level string
 * (or number) field of the JSON body, such as OpenAI's {@code user} or {@code prompt_cache_key}, and
 * {@code prefix} a hash of the prompt's beginning (see {@link PrefixHasher}). Immutable.
 *
 * @param sources in the order tried; never empty
 * @param prefixChars how many characters of the prompt's beginning {@code prefix} hashes ({@code --affinity-prefix})
 */
public record AffinityKeys(List<Source> sources, int prefixChars) {

    /**
     * The default list: a session header, the headers coding agents and chat UIs send on every
     * request of a conversation (Claude Code's subagent then session id, Codex CLI's thread then
     * session id in both spellings, OpenCode's and Open WebUI's), the two OpenAI fields that name a
     * conversation or a user, then the prefix.
     */
    public static final String DEFAULT_SOURCES = "header:X-Session-Id,header:x-claude-code-agent-id,"
            + "header:x-claude-code-session-id,header:thread-id,header:session-id,header:session_id,"
            + "header:x-session-affinity,header:X-OpenWebUI-Chat-Id,body:prompt_cache_key,body:user,prefix";
    /** The default prefix length in characters. */
    public static final int DEFAULT_PREFIX_CHARS = 2048;
    /** The most characters a prefix key may cover; a longer prefix adds scanning, not selectivity. */
    public static final int MAX_PREFIX_CHARS = 1 << 20;

    /** One place a key may come from. */
    public sealed interface Source {
        /** A request header; names compare without case, as HTTP has it. */
        record Header(String name) implements Source {
        }

        /** A top-level field of the JSON body. */
        record Body(String field) implements Source {
        }

        /** The hash of the prompt's beginning. */
        record Prefix() implements Source {
        }
    }

    /** Validates; see {@link #parse}. */
    public AffinityKeys {
        sources = List.copyOf(sources);
        if (sources.isEmpty()) {
            throw new InvalidSettingException("affinityKey", "must name at least one source");
        }
        if (prefixChars < 1 || prefixChars > MAX_PREFIX_CHARS) {
            throw new InvalidSettingException("affinityPrefix", "must be 1 to " + MAX_PREFIX_CHARS + ", was " + prefixChars);
        }
    }

    /** The default sources and prefix length. */
    public static final AffinityKeys DEFAULTS = parse(DEFAULT_SOURCES, DEFAULT_PREFIX_CHARS);

    /**
     * Parses a comma-separated list such as {@code header:X-Session-Id,body:user,prefix}.
     *
     * @throws InvalidSettingException for {@code affinity-key}, saying which entry is wrong and why
     */
    public static AffinityKeys parse(String list, int prefixChars) {
        if (list == null || list.isBlank()) {
            throw new InvalidSettingException("affinityKey", "must name at least one source, such as " + DEFAULT_SOURCES);
        }
        List<Source> out = new ArrayList<>();
        for (String raw : list.split(",", -1)) {
            String entry = raw.trim();
            int colon = entry.indexOf(':');
            String kind = (colon < 0 ? entry : entry.substring(0, colon)).toLowerCase(Locale.ROOT);
            String name = colon < 0 ? "" : entry.substring(colon + 1).trim();
            Source s = switch (kind) {
                case "header" -> name.matches("[!#$%&'*+.^_`|~0-9A-Za-z-]+") ? new Source.Header(name) : null;
                case "body" -> name.isEmpty() ? null : new Source.Body(name);
                case "prefix" -> colon < 0 ? new Source.Prefix() : null;
                default -> null;
            };
            if (s == null) {
                throw new InvalidSettingException("affinityKey", "'" + entry + "' is not a key source; use header:NAME, "
                        + "body:FIELD or prefix, comma-separated, such as " + DEFAULT_SOURCES);
            }
            if (out.contains(s)) {
                throw new InvalidSettingException("affinityKey", "'" + entry + "' is listed twice");
            }
            out.add(s);
        }
        return new AffinityKeys(out, prefixChars);
    }

    /** Returns the position of the {@code body:} source naming {@code field}, or -1. */
    public int bodyIndex(String field) {
        for (int i = 0; i < sources.size(); i++) {
            if (sources.get(i) instanceof Source.Body b && b.field().equals(field)) {
                return i;
            }
        }
        return -1;
    }

    /** Returns the position of the {@code prefix} source, or -1. */
    public int prefixIndex() {
        for (int i = 0; i < sources.size(); i++) {
            if (sources.get(i) instanceof Source.Prefix) {
                return i;
            }
        }
        return -1;
    }

    /** Returns whether any source needs the body read (a field or the prefix) before position {@code before}. */
    public boolean readsBodyBefore(int before) {
        for (int i = 0; i < before && i < sources.size(); i++) {
            if (!(sources.get(i) instanceof Source.Header)) {
                return true;
            }
        }
        return false;
    }
}
