package strom.spark;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * ksqlDB's processing log: a record that cannot be deserialized is skipped, not failed on, and
 * an entry in ksqlDB's shape (a deserialization error) is logged to the {@code processing}
 * logger, the one ksqlDB's own processing log writes to.
 */
final class ProcessingLog {
  private static final Logger LOG = LoggerFactory.getLogger("processing");

  private ProcessingLog() {}

  /** The entry for a record of {@code topic} whose {@code target} ("key" or "value") could not
   * be read, for {@code cause}. */
  static void skipped(String target, String topic, String cause) {
    LOG.error(
        "{\"type\":0,\"deserializationError\":{\"target\":\"" + target + "\",\"errorMessage\":"
            + "\"Error deserializing message from topic: " + json(topic) + "\","
            + "\"recordB64\":null,\"cause\":[\"" + json(cause) + "\"],\"topic\":\""
            + json(topic) + "\"}}");
  }

  private static String json(String text) {
    return String.valueOf(text).replace("\\", "\\\\").replace("\"", "\\\"").replace("\n", "\\n");
  }
}
