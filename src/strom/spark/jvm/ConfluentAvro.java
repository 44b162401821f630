package strom.spark;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.ByteBuffer;
import java.util.HashMap;
import java.util.Map;
import org.apache.avro.Schema;
import org.apache.avro.generic.GenericDatumReader;
import org.apache.avro.generic.GenericDatumWriter;
import org.apache.avro.io.BinaryDecoder;
import org.apache.avro.io.BinaryEncoder;
import org.apache.avro.io.DecoderFactory;
import org.apache.avro.io.EncoderFactory;
import org.apache.spark.sql.Column;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.api.java.UDF1;
import org.apache.spark.sql.avro.AvroDeserializer;
import org.apache.spark.sql.avro.AvroSerializer;
import org.apache.spark.sql.avro.SchemaConverters;
import org.apache.spark.sql.catalyst.CatalystTypeConverters;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.functions;
import scala.Function1;
import scala.Option;

/**
 * Avro in Confluent's schema-registry wire format (the magic byte, a 4-byte schema id, then
 * the Avro binary) as Spark columns, with the Avro conversions Spark's own Avro file format
 * uses (spark-sql's AvroDeserializer and AvroSerializer): no Python per record.
 */
public final class ConfluentAvro {
  private static final int HEADER_BYTES = 5;

  private ConfluentAvro() {}

  /** The Spark type of the values of an Avro schema (JSON text), as JSON. */
  public static String sparkType(String schema) {
    return SchemaConverters.toSqlType(new Schema.Parser().parse(schema)).dataType().json();
  }

  /** Framed Avro binary {@code data} decoded with the schema {@code schema} of
   * {@code schemaId}; a value framed with another id is read with that id's schema, fetched
   * from the registry at {@code registry} (none: "") and resolved to {@code schema} (Avro's
   * schema resolution, as ksqlDB's deserializer reads an evolved producer's records). A value
   * that is not framed, of an id the registry does not give, or not readable as {@code schema}
   * decodes to null, logged to the processing log ({@link ProcessingLog}) as a record of
   * {@code topic} whose {@code target} ("key" or "value") could not be read. */
  public static Column decode(
      Column data, String schema, int schemaId, String topic, String target, String registry) {
    DataType type = DataType.fromJson(sparkType(schema));
    return functions
        .udf(new Decode(schema, type.json(), schemaId, topic, target, registry), type)
        .asNondeterministic() // a filter on the result must not decode (and log) again
        .apply(data);
  }

  /** {@code data} (of the Spark type {@code ddl}: a struct for a record schema, the value's
   * own type for an unwrapped one) encoded in {@code schema}, framed with {@code schemaId}. */
  public static Column encode(Column data, String ddl, String schema, int schemaId) {
    return functions
        .udf(new Encode(schema, ddl, schemaId), DataTypes.BinaryType)
        .apply(data);
  }

  /** The decoding function (its schema parsed once per task's copy). */
  static final class Decode implements UDF1<byte[], Object> {
    private final String schema;
    private final String type;
    private final int schemaId;
    private final String topic;
    private final String target;
    private final String registry;
    private transient Schema avro;
    private transient Map<Integer, GenericDatumReader<Object>> readers;
    private transient AvroDeserializer deserializer;
    private transient Function1<Object, Object> toRow;
    private transient BinaryDecoder decoder;

    Decode(
        String schema, String type, int schemaId, String topic, String target, String registry) {
      this.schema = schema;
      this.type = type;
      this.schemaId = schemaId;
      this.topic = topic;
      this.target = target;
      this.registry = registry;
    }

    /** The reader of records written with schema {@code id}: into the source's schema. */
    private GenericDatumReader<Object> reader(int id) throws IOException {
      GenericDatumReader<Object> found = readers.get(id);
      if (found == null) {
        Schema writer = new Schema.Parser().parse(RegistrySchemas.text(registry, id));
        found = new GenericDatumReader<>(writer, avro);
        readers.put(id, found);
      }
      return found;
    }

    @Override
    public Object call(byte[] value) {
      if (value == null) {
        return null;
      }
      if (value.length < HEADER_BYTES || value[0] != 0) {
        ProcessingLog.skipped(target, topic, "Unknown magic byte!");
        return null;
      }
      int id = ByteBuffer.wrap(value, 1, 4).getInt();
      if (id != schemaId && registry.isEmpty()) {
        ProcessingLog.skipped(target, topic, "Expected schema id " + schemaId + ", got " + id);
        return null;
      }
      if (avro == null) {
        avro = new Schema.Parser().parse(schema);
        DataType spark = DataType.fromJson(type);
        readers = new HashMap<>();
        readers.put(schemaId, new GenericDatumReader<>(avro));
        deserializer = new AvroDeserializer(avro, spark, "CORRECTED", false, "", -1);
        toRow = CatalystTypeConverters.createToScalaConverter(spark);
      }
      decoder =
          DecoderFactory.get()
              .binaryDecoder(value, HEADER_BYTES, value.length - HEADER_BYTES, decoder);
      Object datum;
      try {
        datum = reader(id).read(null, decoder);
      } catch (IOException | RuntimeException e) {
        ProcessingLog.skipped(target, topic, String.valueOf(e.getMessage()));
        return null; // not a record of this schema: skipped, the query goes on
      }
      Option<Object> row = deserializer.deserialize(datum);
      return row.isEmpty() ? null : toRow.apply(row.get()); // a Row, or an unwrapped value
    }
  }

  /** The encoding function (its schema parsed once per task's copy). */
  static final class Encode implements UDF1<Object, byte[]> {
    private final String schema;
    private final String ddl;
    private final int schemaId;
    private transient GenericDatumWriter<Object> writer;
    private transient AvroSerializer serializer;
    private transient Function1<Object, Object> toCatalyst;
    private transient BinaryEncoder encoder;

    Encode(String schema, String ddl, int schemaId) {
      this.schema = schema;
      this.ddl = ddl;
      this.schemaId = schemaId;
    }

    @Override
    public byte[] call(Object value) {
      if (value == null) {
        return null;
      }
      if (writer == null) {
        Schema avro = new Schema.Parser().parse(schema);
        DataType spark = DataType.fromDDL(ddl);
        writer = new GenericDatumWriter<>(avro);
        serializer = new AvroSerializer(spark, avro, false);
        toCatalyst = CatalystTypeConverters.createToCatalystConverter(spark);
      }
      ByteArrayOutputStream out = new ByteArrayOutputStream();
      out.write(0);
      out.writeBytes(ByteBuffer.allocate(4).putInt(schemaId).array());
      encoder = EncoderFactory.get().binaryEncoder(out, encoder);
      try {
        writer.write(serializer.serialize(toCatalyst.apply(value)), encoder);
        encoder.flush();
      } catch (IOException e) {
        throw new UncheckedIOException(e);
      }
      return out.toByteArray();
    }
  }
}
