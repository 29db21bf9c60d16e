package ask

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"image"
	_ "image/gif" // image.DecodeConfig of attached images
	_ "image/jpeg"
	_ "image/png"
	"path"
	"strings"
	"unicode"
	"unicode/utf8"

	_ "golang.org/x/image/webp"

	"github.com/askbi/askbi"
)

// Attachment limits. They are the contract of the chat API
// (docs/chat-api.md, "Attachments"); an adapter sizes its request
// body from them ([MaxAttachmentBodyBytes]).
const (
	// MaxAttachments is how many files one message may carry.
	MaxAttachments = 3
	// MaxTextFileBytes caps a text file's UTF-8 text; a larger one is
	// TooLarge.
	MaxTextFileBytes = 1 << 20
	// MaxTextFileChars is how much of a text file reaches the model; a
	// longer one is cut there, and the model is told to say so.
	MaxTextFileChars = 20000
	// MaxImageBytes caps one image (decoded, not its base64 text).
	MaxImageBytes = 8 << 20
	// MaxImageBytesTotal caps the images of one message together.
	MaxImageBytesTotal = 16 << 20
	// MaxImageSide caps an image's width and height, in pixels.
	MaxImageSide = 8000
	// MaxAttachmentNameChars caps a file name, after sanitizing.
	MaxAttachmentNameChars = 255
)

// MaxAttachmentBodyBytes is the JSON message body an adapter should
// accept: what the largest valid message needs, two images of
// [MaxImageBytes] as base64 (4/3 of [MaxImageBytesTotal], 21.3 MiB) and a
// text file of [MaxTextFileBytes] with room for JSON's escapes (twice its
// size), with 0.7 MiB to spare for the message, the names and the JSON
// around them. 24 MiB. (A text file whose every character needs an
// escape may need up to six times its size; beside two full images it
// does not fit.)
const MaxAttachmentBodyBytes = 24 << 20

// textTypes are the text files accepted, by extension, and the media
// type each is recorded as.
var textTypes = map[string]string{
	".csv": "text/csv", ".json": "application/json", ".log": "text/plain", ".md": "text/markdown",
	".py": "text/x-python", ".sql": "application/sql", ".tsv": "text/tab-separated-values",
	".txt": "text/plain", ".yaml": "application/yaml", ".yml": "application/yaml",
}

// imageTypes are the images accepted: media type → the name
// image.DecodeConfig gives the format.
var imageTypes = map[string]string{"image/png": "png", "image/jpeg": "jpeg", "image/gif": "gif", "image/webp": "webp"}

const textExtensions = ".csv, .json, .log, .md, .py, .sql, .tsv, .txt, .yaml, .yml"

// Attachment is one file sent with a message: a text file (Text) or an
// image (Data), never both.
type Attachment struct {
	// Name is the file's name. Quotes, angle brackets, control and format
	// characters and any directory part are removed before it is used;
	// for a text file its extension decides the type.
	Name string
	// MediaType is an image's declared type: image/png, image/jpeg,
	// image/gif or image/webp. The data must be that image. For a text
	// file it is ignored.
	MediaType string
	// Text is a text file's content.
	Text string
	// Data is an image's bytes.
	Data []byte
}

// AttachmentInfo is what history keeps of an attachment: its name, type
// and size, never an image's bytes.
type AttachmentInfo struct {
	Name string `json:"name"`
	// Type is the media type: an image's, or the one a text file's
	// extension names.
	Type string `json:"type"`
	// Size is the file's size in bytes, as sent.
	Size int `json:"size"`
	// Truncated says the model saw only the first MaxTextFileChars
	// characters of a text file.
	Truncated bool `json:"truncated,omitempty"`
	// Text is a text file's text as the model saw it (redacted and cut),
	// kept only when the team's sharing level was SharingRows when it was
	// sent, and replayed only while the level still is. Clients never get
	// it back (MessageView).
	Text string `json:"text,omitempty"`
}

// AttachmentLimits are the attachment limits as a client shows them.
type AttachmentLimits struct {
	MaxFiles       int      `json:"max_files"`
	TextExtensions []string `json:"text_extensions"`
	TextMaxBytes   int      `json:"text_max_bytes"`
	TextMaxChars   int      `json:"text_max_chars"`
	ImageTypes     []string `json:"image_types"`
	ImageMaxBytes  int      `json:"image_max_bytes"`
	ImagesMaxBytes int      `json:"images_max_bytes"` // all of a message's images together
	ImageMaxSide   int      `json:"image_max_side"`
	// Images says the model reads images; when false, a message with one
	// is refused.
	Images bool `json:"images"`
}

func limits(images bool) AttachmentLimits {
	return AttachmentLimits{MaxFiles: MaxAttachments, TextExtensions: strings.Split(textExtensions, ", "),
		TextMaxBytes: MaxTextFileBytes, TextMaxChars: MaxTextFileChars,
		ImageTypes: []string{"image/png", "image/jpeg", "image/gif", "image/webp"}, ImageMaxBytes: MaxImageBytes,
		ImagesMaxBytes: MaxImageBytesTotal, ImageMaxSide: MaxImageSide, Images: images}
}

// Image is an image part of a user message.
type Image struct {
	MediaType string `json:"media_type"`
	Data      []byte `json:"data"`
}

// ImageReader is implemented by a Provider that can be asked whether its
// model reads image parts (Message.Images). A Provider without it, or
// whose ReadsImages is false, is text-only: a message with an image is
// refused before anything runs.
type ImageReader interface {
	ReadsImages() bool
}

func readsImages(p Provider) bool {
	r, ok := p.(ImageReader)
	return ok && r.ReadsImages()
}

// textOnlyModel is why a message with an image is refused.
const textOnlyModel = "This assistant's model cannot read images. Remove the image and send again, or ask an admin to configure a model that reads images."

// attachment is a checked attachment of the running turn.
type attachment struct {
	info     AttachmentInfo
	text     string // what the model sees of a text file: markers stripped, redacted, cut
	chars    int    // the characters of that text before the cut; 0 when not known
	image    []byte
	withheld bool // replayed without its text or image
}

// checkAttachments checks every attachment against the limits and turns
// it into what the turn uses. redact masks secrets in text files.
// Errors: TooLarge (too many, a file or the images over their limits),
// Unsupported (a type not allowed, data that is not the declared image,
// a text file holding binary data), InvalidArgument (both text and data,
// or an image without data).
func checkAttachments(in []Attachment, redact func(string) string) ([]attachment, error) {
	if len(in) > MaxAttachments {
		return nil, askbi.Errorf(askbi.TooLarge, "attachments: at most %d per message", MaxAttachments)
	}
	out := make([]attachment, 0, len(in))
	total := 0
	for i, a := range in {
		field := fmt.Sprintf("attachments[%d]", i)
		name := redact(CleanFileName(a.Name))
		var at attachment
		var err error
		switch {
		case a.Text != "" && len(a.Data) > 0:
			return nil, askbi.Errorf(askbi.InvalidArgument, "%s: holds text or image data, not both", field)
		case strings.HasPrefix(a.MediaType, "image/") && len(a.Data) == 0:
			return nil, askbi.Errorf(askbi.InvalidArgument, "%s: an image needs its data", field)
		case len(a.Data) > 0:
			if at, err = checkImage(field, name, a); err == nil {
				if total += len(a.Data); total > MaxImageBytesTotal {
					err = askbi.Errorf(askbi.TooLarge, "attachments: images at most %d MiB per message together", MaxImageBytesTotal>>20)
				}
			}
		default:
			at, err = checkText(field, name, a.Text, redact)
		}
		if err != nil {
			return nil, err
		}
		out = append(out, at)
	}
	return out, nil
}

// TooLargeAttachment is the error Send answers for attachment i (from
// 0), an image over [MaxImageBytes] or a text file over [MaxTextFileBytes]:
// an adapter that finds the size while it decodes the request answers
// it before it holds the bytes.
func TooLargeAttachment(i int, image bool) error {
	return tooLarge(fmt.Sprintf("attachments[%d]", i), image)
}

func tooLarge(field string, image bool) error {
	if image {
		return askbi.Errorf(askbi.TooLarge, "%s: an image is at most %d MiB", field, MaxImageBytes>>20)
	}
	return askbi.Errorf(askbi.TooLarge, "%s: a text file is at most %d MiB", field, MaxTextFileBytes>>20)
}

func checkText(field, name, text string, redact func(string) string) (attachment, error) {
	typ, ok := textTypes[strings.ToLower(path.Ext(name))]
	switch {
	case !ok:
		return attachment{}, askbi.Errorf(askbi.Unsupported, "%s: %q is not a supported file; text files can be %s, images PNG, JPEG, GIF or WebP", field, name, textExtensions)
	case len(text) > MaxTextFileBytes:
		return attachment{}, tooLarge(field, false)
	case !utf8.ValidString(text):
		return attachment{}, askbi.Errorf(askbi.Unsupported, "%s: must be UTF-8 text", field)
	case strings.ContainsRune(text, 0):
		return attachment{}, askbi.Errorf(askbi.Unsupported, "%s: holds binary data, not text", field)
	}
	size := len(text)
	text = redact(neutralize(strings.TrimPrefix(text, "\ufeff")))
	at := attachment{info: AttachmentInfo{Name: name, Type: typ, Size: size}, chars: utf8.RuneCountInString(text)}
	if at.chars > MaxTextFileChars {
		n := 0
		for i := range text {
			if n == MaxTextFileChars {
				text = text[:i]
				break
			}
			n++
		}
		at.info.Truncated = true
	}
	at.text = text
	return at, nil
}

func checkImage(field, name string, a Attachment) (attachment, error) {
	format, ok := imageTypes[a.MediaType]
	if !ok {
		return attachment{}, askbi.Errorf(askbi.Unsupported, "%s: media_type %q is not a supported image; use image/png, image/jpeg, image/gif or image/webp", field, shorten(a.MediaType, 40))
	}
	if len(a.Data) > MaxImageBytes {
		return attachment{}, tooLarge(field, true)
	}
	if got := sniffImage(a.Data); got != format {
		if got == "" {
			return attachment{}, askbi.Errorf(askbi.Unsupported, "%s: the data is not a PNG, JPEG, GIF or WebP image", field)
		}
		return attachment{}, askbi.Errorf(askbi.Unsupported, "%s: declared %s but the data is a %s image", field, a.MediaType, strings.ToUpper(got))
	}
	cfg, decoded, err := image.DecodeConfig(bytes.NewReader(a.Data))
	if err != nil || decoded != format || cfg.Width < 1 || cfg.Height < 1 {
		return attachment{}, askbi.Errorf(askbi.Unsupported, "%s: not a readable %s image", field, strings.ToUpper(format))
	}
	if cfg.Width > MaxImageSide || cfg.Height > MaxImageSide {
		return attachment{}, askbi.Errorf(askbi.TooLarge, "%s: an image is at most %d pixels on each side", field, MaxImageSide)
	}
	if !wholeImage(format, a.Data) {
		// A valid header with something else behind it (an executable
		// appended to a PNG) is not passed on as an image.
		return attachment{}, askbi.Errorf(askbi.Unsupported, "%s: the %s image has data after its end or a damaged structure", field, strings.ToUpper(format))
	}
	return attachment{info: AttachmentInfo{Name: name, Type: a.MediaType, Size: len(a.Data)}, image: a.Data}, nil
}

// sniffImage names the image format that data's magic bytes announce, or
// "".
func sniffImage(b []byte) string {
	switch {
	case bytes.HasPrefix(b, []byte("\x89PNG\r\n\x1a\n")):
		return "png"
	case bytes.HasPrefix(b, []byte("\xff\xd8\xff")):
		return "jpeg"
	case bytes.HasPrefix(b, []byte("GIF87a")), bytes.HasPrefix(b, []byte("GIF89a")):
		return "gif"
	case len(b) >= 16 && string(b[:4]) == "RIFF" && string(b[8:15]) == "WEBPVP8":
		return "webp"
	}
	return ""
}

// wholeImage checks that an image's container ends where its data does:
// PNG chunks with valid CRCs up to IEND, GIF's trailer, JPEG's end of
// image, the RIFF size of a WebP.
func wholeImage(format string, b []byte) bool {
	switch format {
	case "png":
		p := b[8:]
		for len(p) >= 12 {
			n := binary.BigEndian.Uint32(p)
			if uint64(n) > uint64(len(p)-12) {
				return false
			}
			body := p[4 : 8+n]
			if crc32.ChecksumIEEE(body) != binary.BigEndian.Uint32(p[8+n:]) {
				return false
			}
			p = p[12+n:]
			if string(body[:4]) == "IEND" {
				return len(p) == 0
			}
		}
		return false
	case "gif":
		return b[len(b)-1] == 0x3b
	case "jpeg":
		return bytes.HasSuffix(b, []byte{0xff, 0xd9})
	case "webp":
		n := int(binary.LittleEndian.Uint32(b[4:8]))
		return n+8 == len(b) || n%2 == 1 && n+9 == len(b)
	}
	return false
}

// CleanFileName is name as askbi uses it: without quotes, angle
// brackets, backslashes, control and format characters (bidirectional
// overrides, zero-width characters) and any directory part, at most
// [MaxAttachmentNameChars] characters; "attachment" when nothing is left.
func CleanFileName(name string) string {
	name = strings.Map(func(r rune) rune {
		switch {
		case r == '"' || r == '\'' || r == '`' || r == '<' || r == '>' || r == '\\',
			r == utf8.RuneError, unicode.IsControl(r), unicode.Is(unicode.Cf, r):
			return -1
		case unicode.IsSpace(r):
			return ' '
		}
		return r
	}, name)
	if i := strings.LastIndexByte(name, '/'); i >= 0 {
		name = name[i+1:]
	}
	name = strings.TrimSpace(name)
	if r := []rune(name); len(r) > MaxAttachmentNameChars {
		// Keep the extension, which decides the type.
		ext := []rune(path.Ext(name))
		if len(ext) > 16 {
			ext = nil
		}
		name = string(r[:MaxAttachmentNameChars-len(ext)]) + string(ext)
	}
	if name == "" || name == "." || name == ".." {
		return "attachment"
	}
	return name
}

// block is an attachment as the model reads it: a delimited block of
// reference data; n is the image's place among the message's images.
func (a attachment) block(n int) string {
	var b strings.Builder
	fmt.Fprintf(&b, "<ATTACHED-FILE name=\"%s\" type=\"%s\" trust=\"untrusted\"", neutralize(a.info.Name), a.info.Type)
	switch {
	case a.info.Truncated && a.chars > 0:
		fmt.Fprintf(&b, " truncated=\"only the first %d of %d characters are included\"", MaxTextFileChars, a.chars)
	case a.info.Truncated:
		fmt.Fprintf(&b, " truncated=\"only the first %d characters are included\"", MaxTextFileChars)
	}
	b.WriteString(">\n")
	switch {
	case a.image != nil:
		fmt.Fprintf(&b, "[image %d of this message]", n)
	case a.withheld && strings.HasPrefix(a.info.Type, "image/"):
		b.WriteString("[an image was attached here; images are not kept in history]")
	case a.withheld:
		b.WriteString("[the file's text is not kept in history at this team's data-sharing level]")
	default:
		// Neutralized when decoded, and again here: history saved
		// before a marker spelling was known holds it still.
		b.WriteString(neutralize(a.text))
	}
	b.WriteString("\n</ATTACHED-FILE>\n")
	return b.String()
}

// attachmentBlocks is the blocks of atts, and their images in order.
func attachmentBlocks(atts []attachment) (string, []Image) {
	var b strings.Builder
	var images []Image
	for _, a := range atts {
		if a.image != nil {
			images = append(images, Image{MediaType: a.info.Type, Data: a.image})
		}
		b.WriteString(a.block(len(images)))
	}
	return b.String(), images
}

// replayed is a saved attachment as a later turn sees it: its text only
// while the level in force still allows rows.
func replayed(info AttachmentInfo, kept bool) attachment {
	if kept && info.Text != "" {
		return attachment{info: info, text: info.Text}
	}
	return attachment{info: info, withheld: true}
}
