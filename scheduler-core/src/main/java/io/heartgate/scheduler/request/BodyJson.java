package io.heartgate.scheduler.request;

import com.fasterxml.jackson.core.JsonFactory;
import com.fasterxml.jackson.core.StreamReadConstraints;

/**
 * The JSON parser settings for reading request bodies: whatever a node behind would parse is parsed
 * here too, so that a field the scheduler judges (the model, the stream flag, the usage option) is
 * never lost behind nesting or a string a node takes. As deep as the deepest of their parsers (Go's
 * {@code encoding/json}, 10,000 levels), strings and field names as long as the body ({@code --max-body}
 * bounds it): a name refused as too long would hide the fields after it from the scheduler's checks
 * while the node reads them.
 */
public final class BodyJson {

    /** The factory every reader of request bodies uses; thread-safe. */
    public static final JsonFactory FACTORY = JsonFactory.builder()
            .streamReadConstraints(StreamReadConstraints.builder()
                    .maxNestingDepth(10_000)
                    .maxStringLength(Integer.MAX_VALUE)
                    .maxNameLength(Integer.MAX_VALUE)
                    .build())
            .build();

    private BodyJson() {
    }
}
