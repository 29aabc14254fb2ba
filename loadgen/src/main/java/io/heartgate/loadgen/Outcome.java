package io.heartgate.loadgen;

import java.util.Locale;

/** Says how one request ended. Every outcome but {@link #OK} is a failure, {@link #DROPPED} one never sent. */
public enum Outcome {
    /** A 200 whose stream reached its end marker. */
    OK,
    /** An answer with a status other than 200; the sample's status says which. */
    HTTP_ERROR,
    /** No complete answer within the timeout, counted from the scheduled start. */
    TIMEOUT,
    /** The connection could not be opened. */
    CONNECT,
    /** A 200 whose stream ended or broke before its end marker. */
    CUT,
    /** A 200 whose stream carried an error object. */
    STREAM_ERROR,
    /** Any other failure before an answer. */
    IO,
    /** Not sent: as many requests as allowed were already under way. */
    DROPPED;

    /** Returns the name a report counts it under: {@code ok}, {@code http_503}, {@code timeout}, ... */
    public String kind(int status) {
        return this == HTTP_ERROR ? "http_" + status : name().toLowerCase(Locale.ROOT);
    }
}
