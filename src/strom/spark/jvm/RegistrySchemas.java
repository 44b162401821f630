package strom.spark;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

/**
 * The schema texts of a schema registry by id ({@code GET /schemas/ids/{id}}), fetched once per
 * JVM: a schema id names one schema forever, so the cache never goes stale. What a decoder reads
 * a record written with another schema than its source's with.
 */
final class RegistrySchemas {
  private static final Map<String, String> TEXTS = new ConcurrentHashMap<>();
  private static final ObjectMapper JSON = new ObjectMapper();
  private static final Duration TIMEOUT = Duration.ofSeconds(30);
  private static volatile HttpClient client;

  private RegistrySchemas() {}

  /** The text of schema {@code id} of the registry at {@code url}; an IOException says why
   * not (not cached: a later record tries again). */
  static String text(String url, int id) throws IOException {
    String key = url + "#" + id;
    String found = TEXTS.get(key);
    if (found != null) {
      return found;
    }
    String base = url.endsWith("/") ? url.substring(0, url.length() - 1) : url;
    HttpRequest request =
        HttpRequest.newBuilder(URI.create(base + "/schemas/ids/" + id)).timeout(TIMEOUT).build();
    HttpResponse<String> response;
    try {
      response = http().send(request, HttpResponse.BodyHandlers.ofString());
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IOException("interrupted fetching schema id " + id, e);
    }
    if (response.statusCode() != 200) {
      throw new IOException(
          "Schema registry answered " + response.statusCode() + " for schema id " + id);
    }
    JsonNode schema = JSON.readTree(response.body()).get("schema");
    if (schema == null || !schema.isTextual()) {
      throw new IOException("Schema registry gave no schema for id " + id);
    }
    TEXTS.put(key, schema.asText());
    return schema.asText();
  }

  private static HttpClient http() {
    if (client == null) {
      synchronized (RegistrySchemas.class) {
        if (client == null) {
          client = HttpClient.newBuilder().connectTimeout(TIMEOUT).build();
        }
      }
    }
    return client;
  }
}
