/**
 * Signs heartbeat records on the agent and verifies them on the scheduler with HMAC-SHA256 keys
 * shared through a keys file ({@link HeartbeatKeys}); the header
 * names and the MAC input are described in {@link HeartbeatSigner}.
 * Works on byte arrays, as the Kafka client hands them over, and knows nothing of Kafka itself.
 */
package io.heartgate.protocol.signing;
