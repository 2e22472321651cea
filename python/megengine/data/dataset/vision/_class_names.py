"""Class names of the detection datasets, in their category order (contiguous id - 1)."""


def _lines(text):
    return tuple(text.strip("\n").split("\n"))


COCO_CLASS_NAMES = _lines(
    """
person
bicycle
car
motorcycle
airplane
bus
train
truck
boat
traffic light
fire hydrant
stop sign
parking meter
bench
bird
cat
dog
horse
sheep
cow
elephant
bear
zebra
giraffe
backpack
umbrella
handbag
tie
suitcase
frisbee
skis
snowboard
sports ball
kite
baseball bat
baseball glove
skateboard
surfboard
tennis racket
bottle
wine glass
cup
fork
knife
spoon
bowl
banana
apple
sandwich
orange
broccoli
carrot
hot dog
pizza
donut
cake
chair
couch
potted plant
bed
dining table
toilet
tv
laptop
mouse
remote
keyboard
cell phone
microwave
oven
toaster
sink
refrigerator
book
clock
vase
scissors
teddy bear
hair drier
toothbrush
"""
)

OBJECTS365_CLASS_NAMES = _lines(
    """
person
sneakers
chair
hat
lamp
bottle
cabinet/shelf
cup
car
glasses
picture/frame
desk
handbag
street lights
book
plate
helmet
leather shoes
pillow
glove
potted plant
bracelet
flower
tv
storage box
vase
bench
wine glass
boots
bowl
dining table
umbrella
boat
flag
speaker
trash bin/can
stool
backpack
couch
belt
carpet
basket
towel/napkin
slippers
barrel/bucket
coffee table
suv
toy
tie
bed
traffic light
pen/pencil
microphone
sandals
canned
necklace
mirror
faucet
bicycle
bread
high heels
ring
van
watch
sink
horse
fish
apple
camera
candle
teddy bear
cake
motorcycle
wild bird
laptop
knife
traffic sign
cell phone
paddle
truck
cow
power outlet
clock
drum
fork
bus
hanger
nightstand
pot/pan
sheep
guitar
traffic cone
tea pot
keyboard
tripod
hockey
fan
dog
spoon
blackboard/whiteboard
balloon
air conditioner
cymbal
mouse
telephone
pickup truck
orange
banana
airplane
luggage
skis
soccer
trolley
oven
remote
baseball glove
paper towel
refrigerator
train
tomato
machinery vehicle
tent
shampoo/shower gel
head phone
lantern
donut
cleaning products
sailboat
tangerine
pizza
kite
computer box
elephant
toiletries
gas stove
broccoli
toilet
stroller
shovel
baseball bat
microwave
skateboard
surfboard
surveillance camera
gun
life saver
cat
lemon
liquid soap
zebra
duck
sports car
giraffe
pumpkin
piano
stop sign
radiator
converter
tissue 
carrot
washing machine
vent
cookies
cutting/chopping board
tennis racket
candy
skating and skiing shoes
scissors
folder
baseball
strawberry
bow tie
pigeon
pepper
coffee machine
bathtub
snowboard
suitcase
grapes
ladder
pear
american football
basketball
potato
paint brush
printer
billiards
fire hydrant
goose
projector
sausage
fire extinguisher
extension cord
facial mask
tennis ball
chopsticks
electronic stove and gas stove
pie
frisbee
kettle
hamburger
golf club
cucumber
clutch
blender
tong
slide
hot dog
toothbrush
facial cleanser
mango
deer
egg
violin
marker
ship
chicken
onion
ice cream
tape
wheelchair
plum
bar soap
scale
watermelon
cabbage
router/modem
golf ball
pine apple
crane
fire truck
peach
cello
notepaper
tricycle
toaster
helicopter
green beans
brush
carriage
cigar
earphone
penguin
hurdle
swing
radio
CD
parking meter
swan
garlic
french fries
horn
avocado
saxophone
trumpet
sandwich
cue
kiwi fruit
bear
fishing rod
cherry
tablet
green vegetables
nuts
corn
key
screwdriver
globe
broom
pliers
volleyball
hammer
eggplant
trophy
dates
board eraser
rice
tape measure/ruler
dumbbell
hamimelon
stapler
camel
lettuce
goldfish
meat balls
medal
toothpaste
antelope
shrimp
rickshaw
trombone
pomegranate
coconut
jellyfish
mushroom
calculator
treadmill
butterfly
egg tart
cheese
pig
pomelo
race car
rice cooker
tuba
crosswalk sign
papaya
hair drier
green onion
chips
dolphin
sushi
urinal
donkey
electric drill
spring rolls
tortoise/turtle
parrot
flute
measuring cup
shark
steak
poker card
binoculars
llama
radish
noodles
yak
mop
crab
microscope
barbell
bread/bun
baozi
lion
red cabbage
polar bear
lighter
seal
mangosteen
comb
eraser
pitaya
scallop
pencil case
saw
table tennis paddle
okra
starfish
eagle
monkey
durian
game board
rabbit
french horn
ambulance
asparagus
hoverboard
pasta
target
hotair balloon
chainsaw
lobster
iron
flashlight
"""
)
