package io.heartgate.scheduler.status;

import java.util.Optional;

/** Tells which nodes passive health checks hold out of routing now. Read-only and thread-safe. */
public interface EjectionView {

    /** Returns whether any node may be ejected; a cheap check for the request path. */
    boolean anyEjected();

    /** Returns whether {@code nodeId} is ejected now. */
    boolean isEjected(String nodeId);

    /** Returns the ejection of {@code nodeId} if it is ejected now. */
    Optional<Ejection> ejection(String nodeId);

    /** Returns the view in which a node is out when either {@code a} or {@code b} holds it out ({@code a}'s reason first). */
    static EjectionView either(EjectionView a, EjectionView b) {
        return new EjectionView() {
            @Override
            public boolean anyEjected() {
                return a.anyEjected() || b.anyEjected();
            }

            @Override
            public boolean isEjected(String nodeId) {
                return a.isEjected(nodeId) || b.isEjected(nodeId);
            }

            @Override
            public Optional<Ejection> ejection(String nodeId) {
                Optional<Ejection> first = a.ejection(nodeId);
                return first.isPresent() ? first : b.ejection(nodeId);
            }
        };
    }

    /** The view in which no node is ever ejected. */
    EjectionView NONE = new EjectionView() {
        @Override
        public boolean anyEjected() {
            return false;
        }

        @Override
        public boolean isEjected(String nodeId) {
            return false;
        }

        @Override
        public Optional<Ejection> ejection(String nodeId) {
            return Optional.empty();
        }
    };
}
