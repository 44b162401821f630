package strom.spark;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ArrayBlockingQueue;
import java.util.concurrent.BlockingQueue;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * ksqlDB's processing log: a record that cannot be deserialized is skipped, not failed on, and
 * an entry in ksqlDB's shape (a deserialization error) is logged to the {@code processing}
 * logger, the one ksqlDB's own processing log writes to. Once {@link #capture} is called, the
 * entries are also kept (up to {@link #CAPACITY}, the newest dropped beyond) for {@link #drain}:
 * how a SQL server writes them to its processing log topic.
 */
public final class ProcessingLog {
  private static final Logger LOG = LoggerFactory.getLogger("processing");
  static final int CAPACITY = 10_000;
  private static volatile BlockingQueue<String> kept;

  private ProcessingLog() {}

  /** Keep the entries of this JVM from now on, for {@link #drain}. */
  public static synchronized void capture() {
    if (kept == null) {
      kept = new ArrayBlockingQueue<>(CAPACITY);
    }
  }

  /** The entries kept since the last call: each {@code <epoch ms> <entry JSON>}. */
  public static String[] drain() {
    List<String> out = new ArrayList<>();
    BlockingQueue<String> queue = kept;
    if (queue != null) {
      queue.drainTo(out);
    }
    return out.toArray(new String[0]);
  }

  /** The entry for a record of {@code topic} whose {@code target} ("key" or "value") could not
   * be read, for {@code cause}. */
  static void skipped(String target, String topic, String cause) {
    String entry =
        "{\"type\":0,\"deserializationError\":{\"target\":\"" + target + "\",\"errorMessage\":"
            + "\"Error deserializing message from topic: " + json(topic) + "\","
            + "\"recordB64\":null,\"cause\":[\"" + json(cause) + "\"],\"topic\":\""
            + json(topic) + "\"},\"recordProcessingError\":null,\"productionError\":null,"
            + "\"serializationError\":null,\"kafkaStreamsThreadError\":null}";
    LOG.error(entry);
    BlockingQueue<String> queue = kept;
    if (queue != null) {
      queue.offer(System.currentTimeMillis() + " " + entry);
    }
  }

  private static String json(String text) {
    return String.valueOf(text).replace("\\", "\\\\").replace("\"", "\\\"").replace("\n", "\\n");
  }
}
