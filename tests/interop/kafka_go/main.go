// Drives Debian's segmentio/kafka-go 0.2.1 (Produce v2 with magic 1 message sets, Fetch v2,
// ListOffsets v1, Metadata v1, the v0/v1 group APIs) against a broker: for every codec the
// client has, it writes keyed, timestamped messages, reads them back from the start and from
// the middle, then consumes one topic as a member of a consumer group and commits.
//
//	kafka_go_interop <host:port> <topic prefix>
//
// Exits 0 when every check passes, 1 with a message otherwise.
package main

import (
	"context"
	"fmt"
	"os"
	"time"

	kafka "github.com/segmentio/kafka-go"
	"github.com/segmentio/kafka-go/gzip"
	"github.com/segmentio/kafka-go/lz4"
	"github.com/segmentio/kafka-go/snappy"
)

const perCodec = 120

func fail(format string, args ...interface{}) {
	fmt.Fprintf(os.Stderr, "FAIL: "+format+"\n", args...)
	os.Exit(1)
}

// readAll reads messages from `from` up to `want` of them.
func readAll(conn *kafka.Conn, from int64, want int) []kafka.Message {
	if _, err := conn.Seek(from, kafka.SeekAbsolute); err != nil {
		fail("seek %d: %v", from, err)
	}
	var out []kafka.Message
	for len(out) < want {
		conn.SetReadDeadline(time.Now().Add(10 * time.Second))
		batch := conn.ReadBatch(1, 64*1024)
		for {
			m, err := batch.ReadMessage()
			if err != nil {
				break
			}
			out = append(out, m)
		}
		if err := batch.Close(); err != nil {
			fail("read batch at %d: %v", from, err)
		}
	}
	return out
}

func main() {
	if len(os.Args) != 3 {
		fail("usage: kafka_go_interop <host:port> <topic prefix>")
	}
	broker, prefix := os.Args[1], os.Args[2]
	codecs := []struct {
		name  string
		codec kafka.CompressionCodec
	}{
		{"none", nil},
		{"gzip", gzip.NewCompressionCodec()},
		{"snappy", snappy.NewCompressionCodec()},
		{"lz4", lz4.NewCompressionCodec()},
	}
	base := time.Unix(1700000000, 0)
	for _, c := range codecs {
		topic := prefix + "-" + c.name
		conn, err := kafka.DialLeader(context.Background(), "tcp", broker, topic, 0)
		if err != nil {
			fail("%s: dial leader: %v", c.name, err)
		}
		conn.SetWriteDeadline(time.Now().Add(10 * time.Second))
		for b := 0; b < perCodec; b += 10 {
			var msgs []kafka.Message
			for i := b; i < b+10; i++ {
				msgs = append(msgs, kafka.Message{
					Key:   []byte(fmt.Sprintf("key-%d", i)),
					Value: []byte(fmt.Sprintf("value %d with %s", i, c.name)),
					Time:  base.Add(time.Duration(i) * time.Millisecond),
				})
			}
			if _, err := conn.WriteCompressedMessages(c.codec, msgs...); err != nil {
				fail("%s: write: %v", c.name, err)
			}
		}
		got := readAll(conn, 0, perCodec)
		if len(got) != perCodec {
			fail("%s: read %d messages, want %d", c.name, len(got), perCodec)
		}
		for i, m := range got {
			if m.Offset != int64(i) || string(m.Key) != fmt.Sprintf("key-%d", i) ||
				string(m.Value) != fmt.Sprintf("value %d with %s", i, c.name) {
				fail("%s: message %d is offset %d key %q value %q", c.name, i, m.Offset, m.Key, m.Value)
			}
			if want := base.Add(time.Duration(i) * time.Millisecond); !m.Time.Equal(want) {
				fail("%s: message %d has time %v, want %v", c.name, i, m.Time, want)
			}
		}
		// From inside a wrapper / batch: the first message is the one asked for.
		mid := readAll(conn, 55, 1)
		if mid[0].Offset != 55 {
			fail("%s: read from 55 starts at %d", c.name, mid[0].Offset)
		}
		first, last, err := conn.ReadOffsets()
		if err != nil || first != 0 || last != perCodec {
			fail("%s: offsets %d..%d (%v), want 0..%d", c.name, first, last, err, perCodec)
		}
		conn.Close()
		fmt.Printf("ok: kafka-go %s\n", c.name)
	}

	// A consumer group member reads one topic and commits what it read.
	r := kafka.NewReader(kafka.ReaderConfig{
		Brokers:  []string{broker},
		GroupID:  prefix + "-group",
		Topic:    prefix + "-gzip",
		MinBytes: 1,
		MaxBytes: 1 << 20,
		MaxWait:  200 * time.Millisecond,
	})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	for i := 0; i < perCodec; i++ {
		m, err := r.FetchMessage(ctx)
		if err != nil {
			fail("group: message %d: %v", i, err)
		}
		if m.Offset != int64(i) {
			fail("group: message %d has offset %d", i, m.Offset)
		}
		if i == perCodec-1 {
			if err := r.CommitMessages(ctx, m); err != nil {
				fail("group: commit: %v", err)
			}
		}
	}
	if err := r.Close(); err != nil {
		fail("group: close: %v", err)
	}
	fmt.Println("ok: kafka-go consumer group")
}
