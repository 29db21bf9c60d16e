package ask

import (
	"bytes"
	"encoding/base64"
	"encoding/binary"
	"hash/crc32"
	"image"
	"image/png"
	"strings"
	"testing"

	"github.com/askbi/askbi/internal/redact"
)

// bigPNG is a valid 1×1 PNG padded to n bytes by an ancillary chunk.
func bigPNG(b *testing.B, n int) []byte {
	var buf bytes.Buffer
	if err := png.Encode(&buf, image.NewGray(image.Rect(0, 0, 1, 1))); err != nil {
		b.Fatal(err)
	}
	p := buf.Bytes()
	pad := n - len(p) - 12
	chunk := make([]byte, 12+pad)
	binary.BigEndian.PutUint32(chunk, uint32(pad))
	copy(chunk[4:], "zzPd")
	binary.BigEndian.PutUint32(chunk[8+pad:], crc32.ChecksumIEEE(chunk[4:8+pad]))
	iend := len(p) - 12
	return append(append(append([]byte{}, p[:iend]...), chunk...), p[iend:]...)
}

// BenchmarkAttachments measures the checks of the largest attachments
// against the baseline of decoding their base64, which an adapter does
// anyway: an 8 MiB PNG (magic bytes, DecodeConfig, the chunk walk with
// CRCs) and a 1 MiB text file (marker stripping, the built-in redaction, the cut).
func BenchmarkAttachments(b *testing.B) {
	img := bigPNG(b, MaxImageBytes)
	enc := base64.StdEncoding.EncodeToString(img)
	text := strings.Repeat("country,signups\nUS,3410\n", MaxTextFileBytes/24)
	noRedact := func(s string) string { return s }
	masks := redact.New().String
	b.Run("baseline/base64-8MiB", func(b *testing.B) {
		b.SetBytes(int64(len(img)))
		for b.Loop() {
			if _, err := base64.StdEncoding.DecodeString(enc); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("image-8MiB", func(b *testing.B) {
		b.SetBytes(int64(len(img)))
		for b.Loop() {
			if _, err := checkAttachments([]Attachment{{Name: "a.png", MediaType: "image/png", Data: img}}, noRedact); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("text-1MiB", func(b *testing.B) {
		b.SetBytes(int64(len(text)))
		for b.Loop() {
			if _, err := checkAttachments([]Attachment{{Name: "a.csv", Text: text}}, masks); err != nil {
				b.Fatal(err)
			}
		}
	})
}
