"""The grammar's word lists: the lexicon that makes the vocabulary exactly 600 tokens.

Counted in `grammar.py`: 4 fixed tokens + 24 determiners + 16 prepositions + 16 adverbs + 100 adjectives
+ 2 x (130 nouns + 50 transitive verbs + 40 intransitive verbs) = 600. Every surface form is a distinct token
(no word is both a noun and a verb), so a token alone says its part of speech and grammatical number.
"""

SINGULAR_DETERMINERS = "a this that every each one another neither".split()
PLURAL_DETERMINERS = "these those some many several two three few".split()
# Determiners that go with either number: the noun after them decides.
ANY_NUMBER_DETERMINERS = "the my your our their his her its".split()

PREPOSITIONS = (
    "near behind under above beside with without inside outside beyond around below across past among against"
).split()

ADVERBS = (
    "quickly slowly quietly loudly happily sadly often rarely again today yesterday soon early late gladly calmly"
).split()

ADJECTIVES = (
    "big small tall short old young red blue green yellow black white brown gray pink purple happy sad angry "
    "calm quiet soft hard warm cold hot cool bright dark quick slow brave shy kind cruel wise silly clever lazy "
    "busy tired hungry thirsty rich poor strong weak gentle fierce wild tame heavy empty full round square flat "
    "sharp smooth rough wet dry fresh stale sweet sour bitter salty spicy tiny huge ancient modern "
    "famous strange lovely ugly pretty shiny dusty muddy sandy rocky sunny rainy windy snowy cloudy noisy lucky "
    "proud honest curious friendly lonely sleepy grumpy cheerful careful silver"
).split()

NOUNS = (
    "cat dog bird horse cow fox wolf bear rabbit lion tiger monkey snake frog duck goat pig donkey camel zebra "
    "eagle owl parrot spider bee ant whale shark dolphin turtle child man woman mouse goose teacher student "
    "doctor farmer baker singer dancer painter writer driver pilot sailor soldier king queen prince princess "
    "book table chair lamp cup plate bottle box bag hat coat shoe sock ring key door window wall roof floor bed "
    "clock phone letter card ticket map coin stone tree flower leaf garden river lake mountain hill forest "
    "field road bridge tower castle house school church market shop village city island boat ship train car "
    "bus bicycle kite ball drum guitar piano picture mirror candle basket blanket pillow apple banana lemon cake "
    "cookie sandwich egg carrot potato tomato"
).split()

# Plurals that the spelling rules in grammar.py do not produce.
IRREGULAR_PLURALS = {
    "child": "children", "man": "men", "woman": "women", "mouse": "mice", "goose": "geese", "leaf": "leaves",
    "potato": "potatoes", "tomato": "tomatoes",
}

TRANSITIVE_VERBS = (
    "see like love hate find follow chase watch carry push pull lift hold help visit remember forget admire "
    "greet meet hear touch paint build fix wash open kick catch throw bring want need prefer ignore notice "
    "observe protect guard feed teach call join miss praise blame trust fear avoid hug"
).split()

INTRANSITIVE_VERBS = (
    "sleep run walk jump swim fly sing dance laugh cry smile shout sit stand wait rest arrive fall grow shine "
    "glow rise dream wander hide play travel talk whisper listen breathe yawn sneeze shiver tremble vanish "
    "appear sparkle drift float"
).split()
