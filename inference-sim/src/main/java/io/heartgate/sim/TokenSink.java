package io.heartgate.sim;

/**
 * Takes what the engine generates for one request; the wire adapter behind it turns that into bytes in
 * its own format. The engine calls it on its own thread, at most one of {@link #finish} and
 * {@link #cut}, and nothing after either.
 */
interface TokenSink {

    /** Takes the next token; {@code g.sent()} already counts it, so it is 1 for the first. */
    void token(Generation g, String token);

    /** Ends the answer: every token the request gets has been given to {@link #token}. */
    void finish(Generation g);

    /** Cuts the connection without ending the answer: the dropAfterTokens fault fired. */
    void cut(Generation g);
}
