package io.heartgate.loadgen;

import java.net.ConnectException;
import java.net.http.HttpConnectTimeoutException;
import java.net.http.HttpTimeoutException;
import java.nio.channels.UnresolvedAddressException;
import java.util.concurrent.CancellationException;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ExecutionException;

/** Sorts client-side failures that came before any response into outcomes. Pure. */
final class Failures {

    private Failures() {
    }

    /** Returns {@link Outcome#CONNECT}, {@link Outcome#TIMEOUT} or {@link Outcome#IO} for a failure without a response. */
    static Outcome classify(Throwable t) {
        for (Throwable c = t; c != null; c = c.getCause()) {
            if (c instanceof HttpConnectTimeoutException || c instanceof ConnectException
                    || c instanceof UnresolvedAddressException) {
                return Outcome.CONNECT;
            }
            if (c instanceof HttpTimeoutException) {
                return Outcome.TIMEOUT;
            }
        }
        return Outcome.IO;
    }

    /** Returns the innermost useful message: the class and message of the root cause, without wrappers. */
    static String message(Throwable t) {
        Throwable c = t;
        while ((c instanceof CompletionException || c instanceof ExecutionException) && c.getCause() != null) {
            c = c.getCause();
        }
        if (c instanceof CancellationException) {
            return "cancelled";
        }
        return c.getMessage() == null ? c.getClass().getSimpleName() : c.getClass().getSimpleName() + ": " + c.getMessage();
    }
}
