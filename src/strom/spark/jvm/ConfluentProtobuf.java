package strom.spark;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.math.BigDecimal;
import java.math.BigInteger;
import java.nio.ByteBuffer;
import java.time.LocalDate;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Base64;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.apache.spark.sql.Column;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.api.java.UDF1;
import org.apache.spark.sql.catalyst.CatalystTypeConverters;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.catalyst.expressions.GenericInternalRow;
import org.apache.spark.sql.catalyst.util.ArrayBasedMapData;
import org.apache.spark.sql.catalyst.util.ArrayData;
import org.apache.spark.sql.catalyst.util.GenericArrayData;
import org.apache.spark.sql.catalyst.util.MapData;
import org.apache.spark.sql.functions;
import org.apache.spark.sql.types.ArrayType;
import org.apache.spark.sql.types.BinaryType;
import org.apache.spark.sql.types.BooleanType;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.DateType;
import org.apache.spark.sql.types.Decimal;
import org.apache.spark.sql.types.DecimalType;
import org.apache.spark.sql.types.DoubleType;
import org.apache.spark.sql.types.FloatType;
import org.apache.spark.sql.types.IntegerType;
import org.apache.spark.sql.types.LongType;
import org.apache.spark.sql.types.MapType;
import org.apache.spark.sql.types.StringType;
import org.apache.spark.sql.types.StructField;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.types.TimestampType;
import org.apache.spark.unsafe.types.UTF8String;
import org.sparkproject.protobuf.ByteString;
import org.sparkproject.protobuf.CodedInputStream;
import org.sparkproject.protobuf.DescriptorProtos.FileDescriptorProto;
import org.sparkproject.protobuf.DescriptorProtos.FileDescriptorSet;
import org.sparkproject.protobuf.Descriptors.Descriptor;
import org.sparkproject.protobuf.Descriptors.DescriptorValidationException;
import org.sparkproject.protobuf.Descriptors.EnumValueDescriptor;
import org.sparkproject.protobuf.Descriptors.FieldDescriptor;
import org.sparkproject.protobuf.Descriptors.FileDescriptor;
import org.sparkproject.protobuf.DynamicMessage;
import org.sparkproject.protobuf.Message;
import scala.Function1;

/**
 * Protobuf in Confluent's schema-registry wire format (the magic byte, a 4-byte schema id, the
 * message indexes, then the message) as Spark columns, with the protobuf-java that Spark ships
 * (shaded as org.sparkproject.protobuf): no Python per record. Fields are matched to Spark's by
 * name in any case; a value that is not a message of the expected schema id and message is
 * skipped (null) and logged to the processing log ({@link ProcessingLog}).
 */
public final class ConfluentProtobuf {
  private static final int HEADER_BYTES = 5;

  private ConfluentProtobuf() {}

  /** Framed {@code data} decoded into the Spark struct type {@code ddl}: {@code files} is a
   * base64 FileDescriptorSet (imports first, the schema's file last), {@code indexes} the
   * message's path in that file, comma-separated. Non-deterministic to Spark, so that a filter
   * on the result does not decode (and log) a second time. */
  public static Column decode(
      Column data,
      String files,
      String indexes,
      int schemaId,
      String ddl,
      String topic,
      String target) {
    DataType spark = DataType.fromDDL(ddl);
    return functions
        .udf(new Decode(files, indexes, schemaId, ddl, topic, target), spark)
        .asNondeterministic()
        .apply(data);
  }

  /** {@code data} (of the Spark type {@code ddl}) encoded as the message, framed with
   * {@code schemaId} and the message indexes. */
  public static Column encode(
      Column data, String ddl, String files, String indexes, int schemaId) {
    return functions
        .udf(new Encode(files, indexes, schemaId, ddl), DataTypes.BinaryType)
        .apply(data);
  }

  static int[] path(String indexes) {
    return Arrays.stream(indexes.split(",")).mapToInt(Integer::parseInt).toArray();
  }

  /** The message at {@code path} in the last file of {@code files}. */
  static Descriptor message(String files, int[] path) {
    try {
      FileDescriptorSet set = FileDescriptorSet.parseFrom(Base64.getDecoder().decode(files));
      Map<String, FileDescriptor> built = new HashMap<>();
      FileDescriptor last = null;
      for (FileDescriptorProto proto : set.getFileList()) {
        List<FileDescriptor> imports = new ArrayList<>();
        for (String name : proto.getDependencyList()) {
          imports.add(built.get(name));
        }
        last = FileDescriptor.buildFrom(proto, imports.toArray(new FileDescriptor[0]));
        built.put(proto.getName(), last);
      }
      Descriptor found = last.getMessageTypes().get(path[0]);
      for (int i = 1; i < path.length; i++) {
        found = found.getNestedTypes().get(path[i]);
      }
      return found;
    } catch (IOException | DescriptorValidationException e) {
      throw new IllegalArgumentException("not a Protobuf schema: " + e.getMessage(), e);
    }
  }

  static FieldDescriptor field(Descriptor message, String name) {
    for (FieldDescriptor f : message.getFields()) {
      if (f.getName().equalsIgnoreCase(name)) {
        return f;
      }
    }
    return null;
  }

  /** The decoding function (its schema built once per task's copy). */
  static final class Decode implements UDF1<byte[], Row> {
    private final String files;
    private final String indexes;
    private final int schemaId;
    private final String type;
    private final String topic;
    private final String target;
    private transient Descriptor descriptor;
    private transient StructType struct;
    private transient int[] path;
    private transient Function1<Object, Object> toRow;

    Decode(
        String files, String indexes, int schemaId, String type, String topic, String target) {
      this.files = files;
      this.indexes = indexes;
      this.schemaId = schemaId;
      this.type = type;
      this.topic = topic;
      this.target = target;
    }

    @Override
    public Row call(byte[] value) {
      if (value == null) {
        return null;
      }
      if (descriptor == null) {
        path = path(indexes);
        descriptor = message(files, path);
        struct = (StructType) DataType.fromDDL(type);
        toRow = CatalystTypeConverters.createToScalaConverter(struct);
      }
      String error = null;
      try {
        if (value.length < HEADER_BYTES || value[0] != 0) {
          error = "Unknown magic byte!";
        } else {
          int id = ByteBuffer.wrap(value, 1, 4).getInt();
          CodedInputStream in =
              CodedInputStream.newInstance(value, HEADER_BYTES, value.length - HEADER_BYTES);
          int[] read = readIndexes(in);
          if (id != schemaId) {
            error = "Expected schema id " + schemaId + ", got " + id;
          } else if (!Arrays.equals(read, path)) {
            error = "Expected message indexes " + Arrays.toString(path) + ", got "
                + Arrays.toString(read);
          } else {
            return (Row) toRow.apply(row(DynamicMessage.parseFrom(descriptor, in), struct));
          }
        }
      } catch (IOException | RuntimeException e) {
        error = String.valueOf(e.getMessage());
      }
      ProcessingLog.skipped(target, topic, error);
      return null;
    }
  }

  static int[] readIndexes(CodedInputStream in) throws IOException {
    int count = in.readSInt32();
    if (count == 0) {
      return new int[] {0};
    }
    int[] out = new int[count];
    for (int i = 0; i < count; i++) {
      out[i] = in.readSInt32();
    }
    return out;
  }

  static InternalRow row(Message message, StructType struct) {
    StructField[] fields = struct.fields();
    Object[] out = new Object[fields.length];
    Descriptor descriptor = message.getDescriptorForType();
    for (int i = 0; i < fields.length; i++) {
      FieldDescriptor f = field(descriptor, fields[i].name());
      out[i] = f == null ? null : read(message, f, fields[i].dataType());
    }
    return new GenericInternalRow(out);
  }

  static Object read(Message message, FieldDescriptor f, DataType type) {
    if (f.isMapField()) {
      if (!(type instanceof MapType map)) {
        return null;
      }
      List<?> entries = (List<?>) message.getField(f);
      FieldDescriptor key = f.getMessageType().findFieldByNumber(1);
      FieldDescriptor value = f.getMessageType().findFieldByNumber(2);
      Object[] keys = new Object[entries.size()];
      Object[] values = new Object[entries.size()];
      for (int i = 0; i < keys.length; i++) {
        Message entry = (Message) entries.get(i);
        keys[i] = single(entry.getField(key), map.keyType());
        values[i] = read(entry, value, map.valueType());
      }
      return new ArrayBasedMapData(new GenericArrayData(keys), new GenericArrayData(values));
    }
    if (f.isRepeated()) {
      if (!(type instanceof ArrayType array)) {
        return null;
      }
      List<?> items = (List<?>) message.getField(f);
      Object[] out = new Object[items.size()];
      for (int i = 0; i < out.length; i++) {
        out[i] = single(items.get(i), array.elementType());
      }
      return new GenericArrayData(out);
    }
    if (f.hasPresence() && !message.hasField(f)) {
      return null;
    }
    return single(message.getField(f), type);
  }

  /** One protobuf value as Spark's internal value of {@code type} (null where it is none). */
  static Object single(Object value, DataType type) {
    if (value instanceof Message message) {
      return fromMessage(message, type);
    }
    if (value instanceof EnumValueDescriptor e) {
      value = e.getName();
    }
    if (value instanceof ByteString bytes) {
      value = bytes.toByteArray();
    }
    if (type instanceof StringType) {
      return value instanceof byte[] ? null : UTF8String.fromString(value.toString());
    }
    if (type instanceof BinaryType) {
      return value instanceof byte[] ? value : null;
    }
    if (type instanceof BooleanType) {
      return value instanceof Boolean ? value : null;
    }
    if (!(value instanceof Number n)) {
      return null;
    }
    if (type instanceof IntegerType) {
      return n.intValue();
    }
    if (type instanceof LongType) {
      return n.longValue();
    }
    if (type instanceof DoubleType) {
      return n.doubleValue();
    }
    if (type instanceof FloatType) {
      return n.floatValue();
    }
    if (type instanceof DecimalType d) {
      return decimal(new BigDecimal(n.toString()), d);
    }
    return null;
  }

  static Decimal decimal(BigDecimal value, DecimalType type) {
    Decimal out = Decimal.apply(value.setScale(type.scale(), java.math.RoundingMode.HALF_UP));
    return out.changePrecision(type.precision(), type.scale()) ? out : null;
  }

  /** The well-known messages ksqlDB maps to its types, and nested messages as structs. */
  static Object fromMessage(Message message, DataType type) {
    Descriptor d = message.getDescriptorForType();
    String name = d.getFullName();
    if (type instanceof TimestampType && name.equals("google.protobuf.Timestamp")) {
      long seconds = ((Number) get(message, "seconds")).longValue();
      long nanos = ((Number) get(message, "nanos")).longValue();
      return seconds * 1_000_000L + nanos / 1_000L;
    }
    if (type instanceof DateType && name.equals("google.type.Date")) {
      return (int) LocalDate.of(
              ((Number) get(message, "year")).intValue(),
              ((Number) get(message, "month")).intValue(),
              ((Number) get(message, "day")).intValue())
          .toEpochDay();
    }
    if (type instanceof DecimalType t && name.equals("confluent.type.Decimal")) {
      byte[] unscaled = ((ByteString) get(message, "value")).toByteArray();
      int scale = ((Number) get(message, "scale")).intValue();
      return decimal(new BigDecimal(new BigInteger(unscaled), scale), t);
    }
    if (name.startsWith("google.protobuf.") && name.endsWith("Value")) { // the wrappers
      return single(get(message, "value"), type);
    }
    if (type instanceof StructType struct) {
      return row(message, struct);
    }
    return null;
  }

  static Object get(Message message, String name) {
    return message.getField(message.getDescriptorForType().findFieldByName(name));
  }

  /** The encoding function (its schema built once per task's copy). */
  static final class Encode implements UDF1<Row, byte[]> {
    private final String files;
    private final String indexes;
    private final int schemaId;
    private final String ddl;
    private transient Descriptor descriptor;
    private transient StructType struct;
    private transient byte[] header;
    private transient Function1<Object, Object> toCatalyst;

    Encode(String files, String indexes, int schemaId, String ddl) {
      this.files = files;
      this.indexes = indexes;
      this.schemaId = schemaId;
      this.ddl = ddl;
    }

    @Override
    public byte[] call(Row value) {
      if (value == null) {
        return null;
      }
      if (descriptor == null) {
        int[] path = path(indexes);
        descriptor = message(files, path);
        struct = (StructType) DataType.fromDDL(ddl);
        toCatalyst = CatalystTypeConverters.createToCatalystConverter(struct);
        header = header(schemaId, path);
      }
      DynamicMessage message = build(descriptor, (InternalRow) toCatalyst.apply(value), struct);
      ByteArrayOutputStream out = new ByteArrayOutputStream();
      out.writeBytes(header);
      try {
        message.writeTo(out);
      } catch (IOException e) {
        throw new UncheckedIOException(e);
      }
      return out.toByteArray();
    }
  }

  /** The magic byte, the schema id and the message indexes ([0] as the single byte 0). */
  static byte[] header(int schemaId, int[] path) {
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    out.write(0);
    out.writeBytes(ByteBuffer.allocate(4).putInt(schemaId).array());
    if (path.length == 1 && path[0] == 0) {
      out.write(0);
    } else {
      writeZigzag(out, path.length);
      for (int index : path) {
        writeZigzag(out, index);
      }
    }
    return out.toByteArray();
  }

  static void writeZigzag(ByteArrayOutputStream out, int value) {
    int encoded = (value << 1) ^ (value >> 31);
    while ((encoded & ~0x7F) != 0) {
      out.write((encoded & 0x7F) | 0x80);
      encoded >>>= 7;
    }
    out.write(encoded);
  }

  static DynamicMessage build(Descriptor descriptor, InternalRow row, StructType struct) {
    DynamicMessage.Builder builder = DynamicMessage.newBuilder(descriptor);
    StructField[] fields = struct.fields();
    for (int i = 0; i < fields.length; i++) {
      FieldDescriptor f = field(descriptor, fields[i].name());
      if (f == null || row.isNullAt(i)) {
        continue;
      }
      DataType type = fields[i].dataType();
      Object value = row.get(i, type);
      if (f.isMapField() && type instanceof MapType map) {
        MapData data = (MapData) value;
        ArrayData keys = data.keyArray();
        ArrayData values = data.valueArray();
        Descriptor entry = f.getMessageType();
        for (int j = 0; j < data.numElements(); j++) {
          DynamicMessage.Builder e = DynamicMessage.newBuilder(entry);
          FieldDescriptor k = entry.findFieldByNumber(1);
          FieldDescriptor v = entry.findFieldByNumber(2);
          e.setField(k, toProto(k, keys.get(j, map.keyType()), map.keyType()));
          if (!values.isNullAt(j)) {
            e.setField(v, toProto(v, values.get(j, map.valueType()), map.valueType()));
          }
          builder.addRepeatedField(f, e.build());
        }
      } else if (f.isRepeated() && type instanceof ArrayType array) {
        ArrayData items = (ArrayData) value;
        for (int j = 0; j < items.numElements(); j++) {
          if (!items.isNullAt(j)) { // a repeated field holds no nulls
            Object item = items.get(j, array.elementType());
            builder.addRepeatedField(f, toProto(f, item, array.elementType()));
          }
        }
      } else {
        builder.setField(f, toProto(f, value, type));
      }
    }
    return builder.build();
  }

  static Number number(Object value) {
    return value instanceof Decimal d ? d.toJavaBigDecimal() : (Number) value;
  }

  /** Spark's internal value of {@code type} as the Java value of field {@code f}. */
  static Object toProto(FieldDescriptor f, Object value, DataType type) {
    switch (f.getJavaType()) {
      case INT:
        return number(value).intValue();
      case LONG:
        return number(value).longValue();
      case FLOAT:
        return number(value).floatValue();
      case DOUBLE:
        return number(value).doubleValue();
      case BOOLEAN:
        return value;
      case STRING:
        return value.toString();
      case BYTE_STRING:
        return ByteString.copyFrom((byte[]) value);
      case ENUM:
        return f.getEnumType().findValueByName(value.toString());
      default:
        return toMessage(f.getMessageType(), value, type);
    }
  }

  static DynamicMessage toMessage(Descriptor d, Object value, DataType type) {
    String name = d.getFullName();
    DynamicMessage.Builder b = DynamicMessage.newBuilder(d);
    if (name.equals("google.protobuf.Timestamp")) {
      long micros = (Long) value;
      b.setField(d.findFieldByName("seconds"), Math.floorDiv(micros, 1_000_000L));
      b.setField(d.findFieldByName("nanos"), (int) Math.floorMod(micros, 1_000_000L) * 1_000);
    } else if (name.equals("google.type.Date")) {
      LocalDate date = LocalDate.ofEpochDay((Integer) value);
      b.setField(d.findFieldByName("year"), date.getYear());
      b.setField(d.findFieldByName("month"), date.getMonthValue());
      b.setField(d.findFieldByName("day"), date.getDayOfMonth());
    } else if (name.equals("confluent.type.Decimal")) {
      BigDecimal decimal = ((Decimal) value).toJavaBigDecimal();
      b.setField(
          d.findFieldByName("value"),
          ByteString.copyFrom(decimal.unscaledValue().toByteArray()));
      b.setField(d.findFieldByName("precision"), decimal.precision());
      b.setField(d.findFieldByName("scale"), decimal.scale());
    } else if (name.startsWith("google.protobuf.") && name.endsWith("Value")) {
      FieldDescriptor f = d.findFieldByName("value");
      b.setField(f, toProto(f, value, type));
    } else {
      return build(d, (InternalRow) value, (StructType) type);
    }
    return b.build();
  }
}
